"""Whether two facts state the same value: numbers within the rounding the text used and across units (°F and
°C, km and miles, a percentage and a fraction), dates by the day they can mean, codes as
written, statuses by group.

``same(a, b)`` is True (the same value), False (the same kind of thing, another value) or None (not
comparable: another dimension or currency, a relative day, statuses on no shared axis). ``derivations(value,
pool)`` says how a number can be computed from others (a sum, a difference, a product, a quotient, a unit
conversion), for a total an answer computed or an argument built from grounded values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from agentotel_eval.detectors.statements.scan import CODE, DATE, NUMBER, STATUS, TIME, Fact

_EPSILON = 1e-9
APPROX_REL = 0.05  # "about 92": within 5%


def tolerance(fact: Fact) -> float:
    """How far a stated number may be from the exact one: half its last written digit, 5%
    when hedged or scaled."""
    tol = 0.5 * 10**-fact.decimals + _EPSILON
    if fact.approx:
        tol = max(tol, abs(fact.value) * APPROX_REL)
    return tol


def close(stated: float, recorded: float, tol: float) -> bool:
    """Within rounding, or cut short rather than rounded ("92" for 92.7)."""
    diff = abs(stated - recorded)
    return diff <= tol or (
        diff < 2 * tol and abs(stated) <= abs(recorded) and math.floor(abs(recorded)) == abs(stated)
    )


def _temperature(value: float, unit: str, to: str) -> float:
    if unit == to or not unit or not to:
        return value
    return value * 9 / 5 + 32 if to == "F" else (value - 32) * 5 / 9


def same_number(stated: Fact, recorded: Fact) -> bool | None:
    a, b = stated.dim, recorded.dim
    if a and b and a != b and not ({a, b} <= {"count", ""}):
        if {a, b} == {"percent", ""}:
            pass
        else:
            return None
    if a == "money" and b == "money" and stated.unit and recorded.unit and stated.unit != recorded.unit:
        return None  # another currency: no exchange rate is assumed
    if a == "count" and b == "count" and stated.unit != recorded.unit:
        return None
    tol = max(tolerance(stated), tolerance(recorded) if recorded.approx else 0.0)
    value = recorded.value
    if a == "temperature" or b == "temperature":
        value = _temperature(value, recorded.unit, stated.unit)
    if close(abs(stated.value), abs(value), tol):
        return True
    if a == "percent" and not b and abs(value) <= 1.0 and close(abs(stated.value), abs(value) * 100, tol):
        return True  # 15% for a recorded 0.15
    return bool(
        b == "percent"
        and not a
        and abs(stated.value) <= 1.0
        and close(abs(stated.value) * 100, abs(value), tol)
    )


def same_date(stated: Fact, recorded: Fact) -> bool | None:
    if stated.dim == "relative" or recorded.dim == "relative":
        return None
    for y1, m1, d1 in stated.value:
        for y2, m2, d2 in recorded.value:
            if m1 == m2 and d1 == d2 and (not y1 or not y2 or y1 == y2):
                return True
    return False


def code_key(text: str) -> str:
    return "".join(ch for ch in text.upper() if ch.isalnum())


def same(stated: Fact, recorded: Fact) -> bool | None:
    """True, False or None (see the module docstring)."""
    if stated.kind != recorded.kind:
        return None
    kind = stated.kind
    if kind == NUMBER:
        return same_number(stated, recorded)
    if kind == DATE:
        return same_date(stated, recorded)
    if kind == TIME:
        return bool(set(stated.value) & set(recorded.value))
    if kind == CODE:
        return code_key(stated.value) == code_key(recorded.value)
    if kind == STATUS:
        if stated.value == recorded.value:
            return True
        shared = set(stated.unit.split(",")) & set(recorded.unit.split(","))
        return False if shared else None
    return None


#: conversions a value may have been written in: (factor, what it is)
_CONVERSIONS = (
    (100.0, "a percentage of"),
    (0.01, "a fraction of"),
    (60.0, "minutes or seconds of"),
    (1 / 60.0, "hours or minutes of"),
    (24.0, "hours of days"),
    (1000.0, "thousandths of"),
    (0.001, "thousands of"),
    (1.609344, "km of miles"),
    (1 / 1.609344, "miles of km"),
    (7.0, "days of weeks"),
)


def _fits(value: float, candidate: float, tol: float) -> bool:
    return abs(abs(value) - abs(candidate)) <= tol


def derivations(
    value: float, pool: Sequence[float], tol: float = 0.005, limit: int = 3, *, conversions: bool = True
) -> list[str]:
    """Ways ``value`` is computed from numbers of ``pool`` (at most ``limit``): a unit conversion of one (with
    ``conversions``), the sum, difference, product or quotient of two, or the sum of all. Equal values are not
    derivations."""
    numbers = [n for n in dict.fromkeys(pool) if math.isfinite(n)]
    found: list[str] = []
    if not numbers or not math.isfinite(value):
        return found
    keyed: dict[float, float] = {}
    for n in numbers:
        keyed.setdefault(round(n, 2), n)

    def held(candidate: float, other_than: float | None = None) -> bool:
        if not math.isfinite(candidate):
            return False
        key = round(candidate, 2)
        for k in (key, round(key - 0.01, 2), round(key + 0.01, 2)):
            n = keyed.get(k)
            if n is not None and abs(n - candidate) <= tol and (other_than is None or n != other_than):
                return True
        return False

    if conversions:
        for n in numbers:
            if not n or abs(n) == abs(value):
                continue
            for scale, what in _CONVERSIONS:
                # a whole factor converts exactly; km and miles only to the digits written
                slack = (
                    tol
                    if float(scale).is_integer() or float(1 / scale).is_integer()
                    else max(tol, abs(n * scale) * 0.005)
                )
                if _fits(value, n * scale, slack):
                    found.append(f"{what} {n:g}")
                    break
            if _fits(value, n * 9 / 5 + 32, 0.6) or _fits(value, (n - 32) * 5 / 9, 0.6):
                found.append(f"{n:g} in the other temperature scale")
            if len(found) >= limit:
                return found[:limit]

    def cofactor(a: float, wanted: float) -> float | None:
        """A number of the pool that times ``a`` (or ``a`` divided by it) gives ``value``, to ``tol``."""
        key = round(wanted, 2)
        for k in (key, round(key - 0.01, 2), round(key + 0.01, 2)):
            n = keyed.get(k)
            if n is not None and n != a and n not in (0, 1, -1):
                return n
        return None

    if len(numbers) <= 64:
        for a in numbers:
            if held(value - a, other_than=a):
                found.append(f"{a:g} + {value - a:g}")
            elif held(a - value) and abs(a - value) > tol:
                found.append(f"{a:g} - {a - value:g}")
            elif (
                a not in (0, 1, -1)
                and (m := cofactor(a, value / a)) is not None
                and abs(a * m - value) <= tol
            ):
                found.append(f"{a:g} × {m:g}")
            elif (
                a not in (0, 1, -1)
                and (d := cofactor(a, value * a)) is not None
                and abs(d / a - value) <= tol
            ):
                found.append(f"{d:g} ÷ {a:g}")
            if len(found) >= limit:
                return found[:limit]
    if len(numbers) > 2 and _fits(value, sum(numbers), tol):
        found.append("the sum of " + ", ".join(f"{n:g}" for n in numbers[:6]))
    return found[:limit]


def any_same(stated: Fact, recorded: Iterable[Fact]) -> bool:
    return any(same(stated, r) is True for r in recorded)
