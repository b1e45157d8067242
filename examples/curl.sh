#!/usr/bin/env bash
# Create an event, list this week's events, then find 30 free minutes in working hours, with
# the key in CALENDAR_API_KEY, on the server that `make run` started: at CALENDAR_BASE_URL when
# set, else at http://HOST:PORT as `make run HOST=… PORT=…` serves (127.0.0.1 and 8000 unless
# given).
#   CALENDAR_API_KEY=calsk_... examples/curl.sh            (after make run)
#   PORT=9101 CALENDAR_API_KEY=calsk_... examples/curl.sh  (after make run PORT=9101)
#   CALENDAR_BASE_URL=https://calendar.example.com CALENDAR_API_KEY=... examples/curl.sh
set -euo pipefail
host=${HOST:-127.0.0.1}
case $host in
  0.0.0.0 | "") host=127.0.0.1 ;; # all interfaces: reached on loopback
  ::) host="[::1]" ;;
  *:*) [[ $host == \[* ]] || host="[$host]" ;; # an IPv6 address
esac
BASE=${CALENDAR_BASE_URL:-http://$host:${PORT:-8000}}
BASE=${BASE%/}
: "${CALENDAR_API_KEY:?set CALENDAR_API_KEY to a key printed by 'make run' or 'calendar-service keys create'}"

start=$(date -u +%Y-%m-%dT%H:00:00Z)
end=$(date -u -d '+1 hour' +%Y-%m-%dT%H:00:00Z 2>/dev/null || date -u -v+1H +%Y-%m-%dT%H:00:00Z)
week_ago=$(date -u -d '-7 days' +%Y-%m-%dT00:00:00Z 2>/dev/null || date -u -v-7d +%Y-%m-%dT00:00:00Z)
in_a_week=$(date -u -d '+7 days' +%Y-%m-%dT00:00:00Z 2>/dev/null || date -u -v+7d +%Y-%m-%dT00:00:00Z)

echo "# create an event"
curl -sS --fail-with-body -X POST "$BASE/api/v1/calendar/events" \
  -H "Authorization: Bearer $CALENDAR_API_KEY" \
  -H "Content-Type: application/json" \
  -H "Idempotency-Key: curl-example-$start" \
  -d "{\"title\": \"Planning (from examples/curl.sh)\", \"startsAt\": \"$start\", \"endsAt\": \"$end\"}"
echo

echo "# list events from a week ago to a week ahead"
curl -sS --fail-with-body -G "$BASE/api/v1/calendar/events" \
  -H "Authorization: Bearer $CALENDAR_API_KEY" \
  --data-urlencode "timeMin=$week_ago" \
  --data-urlencode "timeMax=$in_a_week"
echo

echo "# find 30 free minutes in working hours (09:00-17:00, Monday to Friday) in the next week"
curl -sS --fail-with-body -X POST "$BASE/api/v1/calendar/freeTime" \
  -H "Authorization: Bearer $CALENDAR_API_KEY" \
  -H "Content-Type: application/json" \
  -d "{\"timeMin\": \"$start\", \"timeMax\": \"$in_a_week\", \"durationMinutes\": 30, \"workingHours\": {\"start\": \"09:00\", \"end\": \"17:00\"}, \"limit\": 3}"
echo
