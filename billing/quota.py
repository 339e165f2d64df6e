"""The shared quota store: hard spend budgets (reserve, then settle) and per-key rate
limits, checked together in ONE atomic step per request.

Money is counted in integer nano-dollars (1e-9 USD, rounded up when reserving). A
budget is one (scope, period): ``k<key id>`` or ``o<organisation id>``, a calendar
month or a UTC day. Its state is ``spent`` (settled costs, seeded from the ledger the
first time the period is used) and ``reserved`` (the sum of live reservations). A
request is admitted only if, for every budget that applies, ``spent + reserved +
worst case <= limit``; the reservation is added in the same atomic step. Settling
removes the reservation and adds the real cost. So concurrent requests, in any number
of processes, can never together pass a limit, as long as no call costs more than its
reservation (see ``billing.limits.worst_case``).

Reservations expire (``SPEND_RESERVATION_TTL_S``): each carries a deadline, and every
admission first drops the expired reservations of the budgets it touches. A process
that dies mid-call therefore holds budget for that long at most; its call's real cost
still reaches ``spent`` through the ledger when the period is next seeded.

Rate limits: requests and tokens per fixed minute window (UTC minutes), and calls in
flight (a set of request ids with deadlines, so a crash frees its slot too).

Two implementations with one contract: ``RedisQuota`` (a Lua script per step: atomic
in Redis, shared by every gateway process; used when ``REDIS_URL`` is set) and
``LocalQuota`` (process memory under a lock: the embedded default, one process).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from common.redis_clients import REDIS_TIMEOUT_S, loop_client

NANO_PER_USD = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Budget:
    """One spend budget a request counts against."""

    key: str  # store key, e.g. "<prefix>:spend:key:12:month:202611"
    scope: str  # "key:<id>" or "org:<id>"
    period: str  # "month" or "day"
    period_start: datetime
    limit_nano: int
    expire_at: int  # unix seconds: when the store may forget this period


@dataclass(frozen=True, slots=True)
class RateLimits:
    """One key's rate limits and this request's store keys (fixed minute windows)."""

    rpm: int | None
    tpm: int | None
    concurrent: int | None
    rpm_key: str
    tpm_key: str
    concurrent_key: str
    window_reset_s: float  # seconds until the current minute window ends


@dataclass(slots=True)
class Ticket:
    """What one admitted request holds until it is settled."""

    request_id: str
    budgets: tuple[Budget, ...]
    reserved_nano: int
    rates: RateLimits | None
    tokens: int  # tokens counted against the TPM window at admission
    settled: bool = False
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was not admitted."""

    kind: str  # "budget", "rpm", "tpm", "concurrency", "seed"
    budget_index: int = -1
    remaining_nano: int = 0
    retry_after_s: int = 1
    missing: tuple[int, ...] = ()  # kind "seed": budgets whose period is not seeded yet


class QuotaStore:
    """The contract both stores keep."""

    async def admit(self, ticket: Ticket, seeds: dict[int, int]) -> Refusal | None:
        """Reserve and count ``ticket`` atomically, or refuse (nothing changed)."""
        raise NotImplementedError

    async def settle(self, ticket: Ticket, actual_nano: int, tokens_delta: int) -> list[int]:
        """Replace the reservation by the real cost; return each budget's spent after."""
        raise NotImplementedError

    async def spent(self, budgets: tuple[Budget, ...]) -> list[tuple[int, int] | None]:
        """(spent, reserved) per budget, None where the period is not seeded."""
        raise NotImplementedError


def _retry_after(window_reset_s: float) -> int:
    return max(1, math.ceil(window_reset_s))


# --- Process memory (the embedded default) -----------------------------------------------


class LocalQuota(QuotaStore):
    """The same rules in process memory under a lock (one gateway process)."""

    def __init__(self, clock=time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        # budget key -> {"spent": int, "reserved": int, "res": {rid: (amount, deadline)}}
        self._budgets: dict[str, dict] = {}
        self._counters: dict[str, tuple[int, float]] = {}  # key -> (value, expires at)
        self._inflight: dict[str, dict[str, float]] = {}  # key -> {rid: deadline}
        self.reservation_ttl_s = 900.0

    def _counter(self, key: str, now: float) -> int:
        hit = self._counters.get(key)
        if hit is None or hit[1] <= now:
            self._counters.pop(key, None)
            return 0
        return hit[0]

    def _purge(self, state: dict, now: float) -> None:
        expired = [rid for rid, (_, deadline) in state["res"].items() if deadline <= now]
        for rid in expired:
            state["reserved"] -= state["res"].pop(rid)[0]

    async def admit(self, ticket: Ticket, seeds: dict[int, int]) -> Refusal | None:
        now = self._clock()
        with self._lock:
            missing = []
            for i, budget in enumerate(ticket.budgets):
                state = self._budgets.get(budget.key)
                if state is None:
                    if i not in seeds:
                        missing.append(i)
                        continue
                    state = self._budgets[budget.key] = {
                        "spent": seeds[i],
                        "reserved": 0,
                        "res": {},
                    }
                self._purge(state, now)
            if missing:
                return Refusal("seed", missing=tuple(missing))
            for i, budget in enumerate(ticket.budgets):
                state = self._budgets[budget.key]
                left = budget.limit_nano - state["spent"] - state["reserved"]
                if ticket.reserved_nano > left:
                    return Refusal("budget", budget_index=i, remaining_nano=max(0, left))
            rates = ticket.rates
            if rates is not None:
                retry = _retry_after(rates.window_reset_s)
                if rates.rpm is not None and self._counter(rates.rpm_key, now) + 1 > rates.rpm:
                    return Refusal("rpm", retry_after_s=retry)
                tpm_used = self._counter(rates.tpm_key, now)
                if rates.tpm is not None and tpm_used + ticket.tokens > rates.tpm:
                    return Refusal("tpm", retry_after_s=retry)
                if rates.concurrent is not None:
                    flying = self._inflight.setdefault(rates.concurrent_key, {})
                    for rid in [r for r, deadline in flying.items() if deadline <= now]:
                        del flying[rid]
                    if len(flying) >= rates.concurrent:
                        return Refusal("concurrency", retry_after_s=1)
            deadline = now + self.reservation_ttl_s
            for budget in ticket.budgets:
                state = self._budgets[budget.key]
                state["reserved"] += ticket.reserved_nano
                state["res"][ticket.request_id] = (ticket.reserved_nano, deadline)
            if rates is not None:
                expires = now + rates.window_reset_s + 60
                if rates.rpm is not None:
                    self._counters[rates.rpm_key] = (self._counter(rates.rpm_key, now) + 1, expires)
                if rates.tpm is not None:
                    self._counters[rates.tpm_key] = (
                        self._counter(rates.tpm_key, now) + ticket.tokens,
                        expires,
                    )
                if rates.concurrent is not None:
                    self._inflight[rates.concurrent_key][ticket.request_id] = deadline
        return None

    async def settle(self, ticket: Ticket, actual_nano: int, tokens_delta: int) -> list[int]:
        now = self._clock()
        spent = []
        with self._lock:
            for budget in ticket.budgets:
                state = self._budgets.get(budget.key)
                if state is None:
                    spent.append(-1)
                    continue
                held = state["res"].pop(ticket.request_id, None)
                if held is not None:
                    state["reserved"] -= held[0]
                state["spent"] += actual_nano
                spent.append(state["spent"])
            rates = ticket.rates
            if rates is not None:
                if rates.tpm is not None and tokens_delta:
                    hit = self._counters.get(rates.tpm_key)
                    if hit is not None and hit[1] > now:
                        self._counters[rates.tpm_key] = (max(0, hit[0] + tokens_delta), hit[1])
                if rates.concurrent is not None:
                    self._inflight.get(rates.concurrent_key, {}).pop(ticket.request_id, None)
        return spent

    async def spent(self, budgets: tuple[Budget, ...]) -> list[tuple[int, int] | None]:
        now = self._clock()
        out: list[tuple[int, int] | None] = []
        with self._lock:
            for budget in budgets:
                state = self._budgets.get(budget.key)
                if state is None:
                    out.append(None)
                    continue
                self._purge(state, now)
                out.append((state["spent"], state["reserved"]))
        return out


# --- Redis (every gateway process) -------------------------------------------------------

# KEYS: for each budget i, KEYS[2i-1] = its hash (spent, reserved, r:<rid>), KEYS[2i] =
# its reservations' deadlines (zset rid -> ms); then the RPM, TPM and in-flight keys.
# ARGV: n, rid, amount, reservation ttl ms, then per budget (limit, seed or -1,
# expire-at s), then rpm, tpm, tokens, concurrent (-1 = no limit), window ttl ms.
ADMIT_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(ARGV[1])
local rid = ARGV[2]
local amount = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local missing = {}
for i = 1, n do
  local h, z = KEYS[2*i-1], KEYS[2*i]
  local expired = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, r in ipairs(expired) do
    local a = redis.call('HGET', h, 'r:' .. r)
    if a then
      redis.call('HINCRBY', h, 'reserved', -tonumber(a))
      redis.call('HDEL', h, 'r:' .. r)
    end
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
  if redis.call('HEXISTS', h, 'spent') == 0 then
    local seed = tonumber(ARGV[4 + 3*(i-1) + 2])
    if seed < 0 then
      table.insert(missing, i - 1)
    else
      redis.call('HSETNX', h, 'spent', seed)
      redis.call('EXPIREAT', h, tonumber(ARGV[4 + 3*(i-1) + 3]))
    end
  end
end
if #missing > 0 then return {'seed', 0, 0, unpack(missing)} end
for i = 1, n do
  local h = KEYS[2*i-1]
  local limit = tonumber(ARGV[4 + 3*(i-1) + 1])
  local left = limit - tonumber(redis.call('HGET', h, 'spent'))
    - tonumber(redis.call('HGET', h, 'reserved') or '0')
  if amount > left then
    if left < 0 then left = 0 end
    return {'budget', i - 1, tostring(left)}
  end
end
local b = 4 + 3*n
local rpm, tpm = tonumber(ARGV[b+1]), tonumber(ARGV[b+2])
local tokens, conc = tonumber(ARGV[b+3]), tonumber(ARGV[b+4])
local window = tonumber(ARGV[b+5])
local kr, kt, kc = KEYS[2*n+1], KEYS[2*n+2], KEYS[2*n+3]
if rpm >= 0 and tonumber(redis.call('GET', kr) or '0') + 1 > rpm then
  return {'rpm', 0, 0}
end
if tpm >= 0 and tonumber(redis.call('GET', kt) or '0') + tokens > tpm then
  return {'tpm', 0, 0}
end
if conc >= 0 then
  redis.call('ZREMRANGEBYSCORE', kc, '-inf', now)
  if redis.call('ZCARD', kc) >= conc then return {'concurrency', 0, 0} end
end
for i = 1, n do
  local h, z = KEYS[2*i-1], KEYS[2*i]
  redis.call('HINCRBY', h, 'reserved', amount)
  redis.call('HSET', h, 'r:' .. rid, amount)
  redis.call('ZADD', z, now + ttl, rid)
  redis.call('EXPIREAT', z, tonumber(ARGV[4 + 3*(i-1) + 3]))
end
if rpm >= 0 then
  redis.call('INCR', kr)
  redis.call('PEXPIRE', kr, window)
end
if tpm >= 0 then
  redis.call('INCRBY', kt, tokens)
  redis.call('PEXPIRE', kt, window)
end
if conc >= 0 then
  redis.call('ZADD', kc, now + ttl, rid)
  redis.call('PEXPIRE', kc, ttl)
end
return {'ok', 0, 0}
"""

# Both settlements' start. ARGV: n, rid, actual. ``release(i)`` frees the reservation
# budget ``i`` (KEYS 2i-1, 2i: hash, reservations zset) holds for the call, if any, and
# says whether there was one.
_SETTLE_PRELUDE_LUA = """
local n = tonumber(ARGV[1])
local rid = ARGV[2]
local actual = tonumber(ARGV[3])
local function release(i)
  local h, z = KEYS[2*i-1], KEYS[2*i]
  local a = redis.call('HGET', h, 'r:' .. rid)
  if a then
    redis.call('HINCRBY', h, 'reserved', -tonumber(a))
    redis.call('HDEL', h, 'r:' .. rid)
    redis.call('ZREM', z, rid)
  end
  return a ~= false
end
"""

# KEYS as ADMIT_LUA. ARGV: n, rid, actual, tokens delta, has tpm (0/1), has concurrent.
SETTLE_LUA = (
    _SETTLE_PRELUDE_LUA
    + """
local out = {}
for i = 1, n do
  local h = KEYS[2*i-1]
  release(i)
  if redis.call('HEXISTS', h, 'spent') == 1 then
    table.insert(out, tostring(redis.call('HINCRBY', h, 'spent', actual)))
  else
    table.insert(out, '-1')
  end
end
local delta = tonumber(ARGV[4])
if ARGV[5] == '1' and delta ~= 0 and redis.call('EXISTS', KEYS[2*n+2]) == 1 then
  redis.call('INCRBY', KEYS[2*n+2], delta)
end
if ARGV[6] == '1' then redis.call('ZREM', KEYS[2*n+3], rid) end
return out
"""
)

# The reconciler's settlement of a call whose process died (billing.limits.
# settle_abandoned). KEYS: (hash, reservations zset) of every budget the call may have
# reserved against, then its key's in-flight set. ARGV: n, rid, actual. Only a budget
# still holding the call's reservation is settled (and counts ``actual`` as spent): a
# call its own process settled, or settled twice, changes nothing.
SETTLE_HELD_LUA = (
    _SETTLE_PRELUDE_LUA
    + """
local settled = 0
for i = 1, n do
  local h = KEYS[2*i-1]
  if release(i) then
    if redis.call('HEXISTS', h, 'spent') == 1 then redis.call('HINCRBY', h, 'spent', actual) end
    settled = settled + 1
  end
end
redis.call('ZREM', KEYS[2*n+1], rid)
return settled
"""
)

SPENT_LUA = """
local out = {}
for i = 1, #KEYS do
  local v = redis.call('HMGET', KEYS[i], 'spent', 'reserved')
  if v[1] then
    table.insert(out, v[1])
    table.insert(out, v[2] or '0')
  else
    table.insert(out, '-1')
    table.insert(out, '0')
  end
end
return out
"""


class RedisQuota(QuotaStore):
    """The rules as Lua scripts in Redis: each step is atomic across processes."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._clients: dict[asyncio.AbstractEventLoop, object] = {}
        self._scripts_by_loop: dict[asyncio.AbstractEventLoop, tuple] = {}
        self.reservation_ttl_s = 900.0

    def _scripts(self):
        loop = asyncio.get_running_loop()
        hit = self._scripts_by_loop.get(loop)
        if hit is None:
            client = loop_client(self._clients, self._url, max_connections=32)
            hit = self._scripts_by_loop[loop] = (
                client.register_script(ADMIT_LUA),
                client.register_script(SETTLE_LUA),
                client.register_script(SPENT_LUA),
            )
        return hit

    @staticmethod
    def _keys(ticket: Ticket) -> list[str]:
        keys = []
        for budget in ticket.budgets:
            keys += [budget.key, f"{budget.key}:res"]
        rates = ticket.rates
        if rates is None:
            base = f"{ticket.budgets[0].key}:norate"
            return [*keys, base, base, base]
        return [*keys, rates.rpm_key, rates.tpm_key, rates.concurrent_key]

    async def admit(self, ticket: Ticket, seeds: dict[int, int]) -> Refusal | None:
        admit, _, _ = self._scripts()
        args: list = [
            len(ticket.budgets),
            ticket.request_id,
            ticket.reserved_nano,
            int(self.reservation_ttl_s * 1000),
        ]
        for i, budget in enumerate(ticket.budgets):
            args += [budget.limit_nano, seeds.get(i, -1), budget.expire_at]
        rates = ticket.rates
        if rates is None:
            args += [-1, -1, 0, -1, 60_000]
        else:
            args += [
                -1 if rates.rpm is None else rates.rpm,
                -1 if rates.tpm is None else rates.tpm,
                ticket.tokens,
                -1 if rates.concurrent is None else rates.concurrent,
                int((rates.window_reset_s + 60) * 1000),
            ]
        kind, index, value, *missing = await admit(keys=self._keys(ticket), args=args)
        if kind == "ok":
            return None
        if kind == "seed":
            return Refusal("seed", missing=tuple(int(m) for m in missing))
        if kind == "budget":
            return Refusal("budget", budget_index=int(index), remaining_nano=int(value))
        retry = 1 if kind == "concurrency" else _retry_after(rates.window_reset_s)
        return Refusal(kind, retry_after_s=retry)

    async def settle(self, ticket: Ticket, actual_nano: int, tokens_delta: int) -> list[int]:
        _, settle, _ = self._scripts()
        rates = ticket.rates
        args = [
            len(ticket.budgets),
            ticket.request_id,
            actual_nano,
            tokens_delta,
            int(rates is not None and rates.tpm is not None),
            int(rates is not None and rates.concurrent is not None),
        ]
        return [int(v) for v in await settle(keys=self._keys(ticket), args=args)]

    async def spent(self, budgets: tuple[Budget, ...]) -> list[tuple[int, int] | None]:
        _, _, spent = self._scripts()
        values = await spent(keys=[b.key for b in budgets], args=[])
        out: list[tuple[int, int] | None] = []
        for i in range(0, len(values), 2):
            s = int(values[i])
            out.append(None if s < 0 else (s, int(values[i + 1])))
        return out


def settle_held(url: str, settlements: list[tuple[list[str], str, int]]) -> int:
    """Settle, in Redis and from synchronous code (the reconciler), each (keys as
    SETTLE_HELD_LUA's, request id, actual nano-dollars) whose reservation is still held;
    one round trip for all. Returns the budgets settled."""
    import redis

    if not settlements:
        return 0
    client = redis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=REDIS_TIMEOUT_S,
        socket_connect_timeout=REDIS_TIMEOUT_S,
    )
    try:
        script = client.register_script(SETTLE_HELD_LUA)
        with client.pipeline(transaction=False) as pipe:
            for keys, request_id, actual_nano in settlements:
                script(keys=keys, args=[(len(keys) - 1) // 2, request_id, actual_nano], client=pipe)
            return sum(int(settled) for settled in pipe.execute())
    finally:
        client.close()
