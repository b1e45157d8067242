// The feed on stdin, expanded by two JavaScript readers (the npm devDependencies ical.js and
// node-ical) over [argv[2], argv[3]): prints {"icaljs": [...], "nodeical": [...]}, each a list
// of [title, start, end] with ISO 8601 UTC times; occurrences cancelled by a STATUS:CANCELLED
// exception left out, as calendar apps leave them out. Run by tests/rest/ical/test_feed_readers.py.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ICAL = require('ical.js');
const nodeical = require('node-ical');

const text = fs.readFileSync(0, 'utf8');
const from = new Date(process.argv[2]);
const to = new Date(process.argv[3]);
const iso = (d) => d.toISOString().replace('.000Z', 'Z');
const inWindow = (start, end) => end > from && start < to;
const cancelled = (status) => String(status || '').toUpperCase() === 'CANCELLED';

function icaljs() {
  const root = new ICAL.Component(ICAL.parse(text));
  for (const vtimezone of root.getAllSubcomponents('vtimezone')) {
    ICAL.TimezoneService.register(new ICAL.Timezone(vtimezone));
  }
  const byUid = new Map();
  for (const vevent of root.getAllSubcomponents('vevent')) {
    const uid = vevent.getFirstPropertyValue('uid');
    if (!byUid.has(uid)) byUid.set(uid, []);
    byUid.get(uid).push(vevent);
  }
  const found = [];
  for (const vevents of byUid.values()) {
    const main = vevents.find((v) => !v.hasProperty('recurrence-id'));
    if (!main) continue;
    const event = new ICAL.Event(main);
    for (const v of vevents) if (v !== main) event.relateException(v);
    if (!event.isRecurring()) {
      const start = event.startDate.toJSDate();
      const end = event.endDate.toJSDate();
      if (inWindow(start, end)) found.push([event.summary, iso(start), iso(end)]);
      continue;
    }
    const iterator = event.iterator();
    for (let next = iterator.next(); next; next = iterator.next()) {
      const details = event.getOccurrenceDetails(next);
      const start = details.startDate.toJSDate();
      if (start >= to) break;
      const end = details.endDate.toJSDate();
      if (cancelled(details.item.component.getFirstPropertyValue('status'))) continue;
      if (inWindow(start, end)) found.push([details.item.summary, iso(start), iso(end)]);
    }
  }
  return found;
}

function nodeIcal() {
  const data = nodeical.sync.parseICS(text);
  const found = [];
  for (const event of Object.values(data)) {
    if (event.type !== 'VEVENT') continue;
    const instances = nodeical.expandRecurringEvent(event, { from, to, expandOngoing: true });
    for (const i of instances) {
      if (cancelled(i.event.status)) continue;
      if (inWindow(i.start, i.end)) found.push([i.summary, iso(i.start), iso(i.end)]);
    }
  }
  return found;
}

process.stdout.write(JSON.stringify({ icaljs: icaljs(), nodeical: nodeIcal() }));
