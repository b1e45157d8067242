// tsdav (the npm devDependency many web apps use for CalDAV) against our server: discover from
// the base address, fetch the calendars and a week's events, create, update (with its ETag),
// delete. Prints what it saw as JSON. Run by tests/dav/test_tsdav.py:
//   node tsdav_client.mjs BASE_URL EMAIL APP_PASSWORD
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { DAVClient } = require('tsdav');

const [serverUrl, username, password] = process.argv.slice(2);
const client = new DAVClient({
  serverUrl,
  credentials: { username, password },
  authMethod: 'Basic',
  defaultAccountType: 'caldav',
});
const seen = {};
await client.login();
const calendars = await client.fetchCalendars();
seen.calendars = calendars.map((c) => c.displayName).sort();
const calendar = calendars.find((c) => c.displayName === 'Work');
const week = { start: '2026-03-02T00:00:00Z', end: '2026-03-09T00:00:00Z' };
const before = await client.fetchCalendarObjects({ calendar, timeRange: week });
seen.before = before.map((o) => o.data.match(/SUMMARY:(.*)/)[1].trim()).sort();

const text = (summary) =>
  [
    'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//tsdav test//EN', 'BEGIN:VEVENT',
    'UID:tsdav-1', 'DTSTAMP:20260101T000000Z', 'DTSTART:20260304T150000Z',
    'DTEND:20260304T160000Z', `SUMMARY:${summary}`, 'END:VEVENT', 'END:VCALENDAR', '',
  ].join('\r\n');
const created = await client.createCalendarObject({
  calendar, filename: 'tsdav-1.ics', iCalString: text('Made by tsdav'),
});
seen.created = created.status;
const url = new URL('tsdav-1.ics', calendar.url).href;
let [object] = await client.fetchCalendarObjects({ calendar, objectUrls: [url] });
seen.fetched = object.data.includes('SUMMARY:Made by tsdav');
const updated = await client.updateCalendarObject({
  calendarObject: { url, etag: object.etag, data: text('Moved by tsdav') },
});
seen.updated = updated.status;
const stale = await client.updateCalendarObject({
  calendarObject: { url, etag: object.etag, data: text('Lost update') },
});
seen.stale = stale.status;
[object] = await client.fetchCalendarObjects({ calendar, objectUrls: [url] });
const deleted = await client.deleteCalendarObject({ calendarObject: { url, etag: object.etag } });
seen.deleted = deleted.status;
const after = await client.fetchCalendarObjects({ calendar, timeRange: week });
seen.after = after.map((o) => o.data.match(/SUMMARY:(.*)/)[1].trim()).sort();
process.stdout.write(JSON.stringify(seen));
