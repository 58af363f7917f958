# The Lua scripts of the Redis event store (_events.py): its appends, and the byte counts
# that bound it as MemoryEventStore (runtime/http/_event_store.py) is bounded.
#
# Keys, under a prefix ``p``, besides the events, the streams and the leases (_events.py):
#
# - ``{p}:event-bytes:{session}``: a hash of the bytes of events each of the session's
#   streams holds. It expires with the session's newest stream.
# - ``{p}:event-sessions``: a sorted set of the sessions by the bytes they hold (the
#   session's bytes), so that past the total the sessions holding the most give way first.
# - ``{p}:event-total``: a hash of the bytes all sessions hold (``bytes``) and, while a
#   shrink left more than ``max_bytes`` (each stream's newest event cannot go), the total
#   past which the next shrink starts (``shrink-at``); absent, it is ``max_bytes``.
# - ``{p}:event-expiry``: a sorted set of the sessions by when their counts expire (ms),
#   so that the bytes of a session whose keys Redis expired leave the total: each append
#   looks at a few sessions due.
#
# A session holding no bytes (priming events only) has none of these. A stream whose key
# expired while its session lived is found by the next append to it, or by a shrink of
# its session, and its bytes leave the counts then. The scripts name the keys of other
# sessions (a shrink), so they need one Redis, not a Cluster.

from __future__ import annotations

from typing import Final

__all__ = ["APPEND", "FORGET_SESSION", "FORGET_STREAM"]

# ARGV[1]: the store's settings, ``"max_bytes ttl_ms max_events_per_stream
# max_bytes_per_stream max_bytes_per_session prefix"``; ARGV[2]: the session id.
_COUNTS: Final = """
local MAX, TTL, MAX_EVENTS, MAX_STREAM, MAX_SESSION, P =
  string.match(ARGV[1], '^(%d+) (%d+) (%d+) (%d+) (%d+) (.*)$')
MAX, TTL, MAX_EVENTS = tonumber(MAX), tonumber(TTL), tonumber(MAX_EVENTS)
MAX_STREAM, MAX_SESSION = tonumber(MAX_STREAM), tonumber(MAX_SESSION)
local SESSION = ARGV[2]
local SESSIONS, TOTAL, EXPIRY = P .. ':event-sessions', P .. ':event-total', P .. ':event-expiry'
-- the total as the last change left it (nil: unchanged)
local total_now = nil

local function events_key(session, stream) return P .. ':events:' .. session .. ':' .. stream end
local function bytes_key(session) return P .. ':event-bytes:' .. session end

local function now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

local function add_total(n)
  if n == 0 then return end
  total_now = redis.call('HINCRBY', TOTAL, 'bytes', n)
  if total_now <= 0 then
    redis.call('DEL', TOTAL)
  elseif n < 0 and total_now <= MAX then
    -- Back under the total: the next shrink starts past it again.
    redis.call('HDEL', TOTAL, 'shrink-at')
  end
end

-- n bytes more (fewer, if negative) held by a session; its bytes now.
local function add_session(session, n)
  local size = tonumber(redis.call('ZINCRBY', SESSIONS, n, session))
  if size <= 0 then redis.call('ZREM', SESSIONS, session) end
  add_total(n)
  return size
end

-- A session's count is gone (expired, or forgotten): what the total counted for it goes.
local function forget_count(session)
  local score = redis.call('ZSCORE', SESSIONS, session)
  redis.call('ZREM', EXPIRY, session)
  if not score then return 0 end
  redis.call('ZREM', SESSIONS, session)
  add_total(-tonumber(score))
  return tonumber(score)
end

local function drop_oldest(key)
  local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)[1]
  redis.call('XDEL', key, first[1])
  return string.len(first[2][2] or '')
end

-- Drop the oldest events of a session's oldest streams (never a stream's newest) until
-- ``excess`` bytes are gone or nothing more may go; the bytes gone.
local function shrink(session, excess)
  local key = bytes_key(session)
  local fields = redis.call('HGETALL', key)
  if #fields == 0 then return forget_count(session) end
  local streams, freed = {}, 0
  for i = 1, #fields, 2 do
    local stream, held = fields[i], tonumber(fields[i + 1])
    local events = events_key(session, stream)
    local first = redis.call('XRANGE', events, '-', '+', 'COUNT', 1)[1]
    if first then
      local ms, seq = string.match(first[1], '^(%d+)-(%d+)$')
      streams[#streams + 1] = {tonumber(ms), tonumber(seq), stream, events}
    else
      -- The stream expired on its own: its bytes are held no more.
      redis.call('HDEL', key, stream)
      freed = freed + held
    end
  end
  -- Oldest first: by their oldest event's entry id, and streams whose oldest events
  -- Redis stored at once (the same entry id in two streams) by stream id.
  table.sort(streams, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[3] < b[3]
  end)
  for _, stream in ipairs(streams) do
    if freed >= excess then break end
    local length, gone = redis.call('XLEN', stream[4]), 0
    while freed + gone < excess and length > 1 do
      gone = gone + drop_oldest(stream[4])
      length = length - 1
    end
    if gone > 0 and redis.call('HINCRBY', key, stream[3], -gone) <= 0 then
      redis.call('HDEL', key, stream[3])
    end
    freed = freed + gone
  end
  if freed > 0 then add_session(session, -freed) end
  return freed
end

-- Past the total, the sessions holding the most give way, down to nine tenths of it.
local function shrink_all()
  local excess = tonumber(redis.call('HGET', TOTAL, 'bytes') or '0') - math.floor(MAX * 9 / 10)
  for _, session in ipairs(redis.call('ZREVRANGE', SESSIONS, 0, -1)) do
    if excess <= 0 then break end
    excess = excess - shrink(session, excess)
  end
  -- What could not go is not looked through again until another tenth was added.
  local total = tonumber(redis.call('HGET', TOTAL, 'bytes') or '0')
  if total > MAX then
    redis.call('HSET', TOTAL, 'shrink-at', total + math.floor(MAX / 10))
  end
end

-- The counts of sessions due to expire by now: gone with their keys, or due later.
local function sweep()
  local at = now()
  for _, session in ipairs(redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', at, 'LIMIT', 0, 16)) do
    local left = redis.call('PTTL', bytes_key(session))
    if left == -2 then
      forget_count(session)
    elseif left == -1 then
      redis.call('ZREM', EXPIRY, session)
    else
      redis.call('ZADD', EXPIRY, at + left, session)
    end
  end
end
"""

# KEYS: the stream, the session's set of streams, owed ids, lease, the session's bytes.
# ARGV (after the two above): stream id, data, owed ids ('' for none: no lease), lease
# ms. -> the entry id.
APPEND: Final = (
    _COUNTS
    + """
local stream, data, BYTES = ARGV[3], ARGV[4], KEYS[5]
local counted = redis.call('PEXPIRE', BYTES, TTL) == 1
local before = 0
if counted then
  before = tonumber(redis.call('HGET', BYTES, stream) or '0')
else
  -- A session holding no bytes: new, or its count expired (what the total still counts
  -- of it goes). Sessions due to expire are looked at now.
  forget_count(SESSION)
  sweep()
end
local entry = redis.call('XADD', KEYS[1], '*', 'd', data)
redis.call('PEXPIRE', KEYS[1], TTL)
redis.call('SADD', KEYS[2], stream)
redis.call('PEXPIRE', KEYS[2], TTL)
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[3], ARGV[5], 'PX', TTL)
  redis.call('SET', KEYS[4], '1', 'PX', ARGV[6])
end
local length = redis.call('XLEN', KEYS[1])
-- A stream of one event is new, or expired while its session lived: what it held before
-- is held no more.
local held = string.len(data) + (length > 1 and before or 0)
while length > 1 and (length > MAX_EVENTS or held > MAX_STREAM) do
  held = held - drop_oldest(KEYS[1])
  length = length - 1
end
-- Below nothing only for events an older version stored without counting them.
held = math.max(held, 0)
if held == before then return entry end
if held > 0 then
  redis.call('HSET', BYTES, stream, held)
else
  redis.call('HDEL', BYTES, stream)
end
local size = add_session(SESSION, held - before)
if not counted then
  redis.call('PEXPIRE', BYTES, TTL)
  redis.call('ZADD', EXPIRY, now() + TTL, SESSION)
end
if size > MAX_SESSION then shrink(SESSION, size - MAX_SESSION) end
if total_now and total_now > MAX then
  if total_now > tonumber(redis.call('HGET', TOTAL, 'shrink-at') or MAX) then shrink_all() end
end
return entry
"""
)

# KEYS: the stream, owed ids, lease, the session's set of streams, the session's bytes.
# ARGV (after the two above): the stream id.
FORGET_STREAM: Final = (
    _COUNTS
    + """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('SREM', KEYS[4], ARGV[3])
local held = redis.call('HGET', KEYS[5], ARGV[3])
if held then
  redis.call('HDEL', KEYS[5], ARGV[3])
  add_session(SESSION, -tonumber(held))
end
if redis.call('EXISTS', KEYS[5]) == 0 then redis.call('ZREM', EXPIRY, SESSION) end
"""
)

# KEYS: every key of the session (its bytes among them). ARGV: the two above.
FORGET_SESSION: Final = (
    _COUNTS
    + """
for first = 1, #KEYS, 1000 do
  redis.call('DEL', unpack(KEYS, first, math.min(first + 999, #KEYS)))
end
forget_count(SESSION)
"""
)
