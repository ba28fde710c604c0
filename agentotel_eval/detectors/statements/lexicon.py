"""The words statements are read with: units and what they measure, months, status words and their groups, and how
an answer says that something did not work. Data only; ``scan`` and ``clauses`` compile it.

Every table is small and closed on purpose: a word that is not here is read as a plain word, never guessed at.
"""

from __future__ import annotations

#: currency symbols and names -> ISO code. "$" alone is read as USD (the usual case; "CA$", "A$" are their own).
CURRENCY_SYMBOLS = {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW", "₽": "RUB",
                    "₺": "TRY", "₪": "ILS", "฿": "THB", "₫": "VND", "₱": "PHP", "R$": "BRL", "C$": "CAD", "CA$": "CAD",
                    "A$": "AUD", "AU$": "AUD", "NZ$": "NZD", "HK$": "HKD", "S$": "SGD", "Fr.": "CHF", "kr": "SEK"}
CURRENCY_CODES = frozenset({
    "USD", "EUR", "GBP", "JPY", "CNY", "RMB", "INR", "CHF", "CAD", "AUD", "NZD", "SEK", "NOK", "DKK", "PLN", "CZK",
    "HUF", "BRL", "MXN", "ZAR", "SGD", "HKD", "KRW", "TRY", "RUB", "AED", "SAR", "ILS", "THB", "IDR", "MYR", "PHP",
    "VND", "EGP", "NGN", "KES", "ARS", "CLP", "COP", "PEN", "TWD", "ISK", "RON", "BGN", "UAH", "QAR", "KWD", "MAD",
})
CURRENCY_WORDS = {
    "dollar": "USD", "dollars": "USD", "usd": "USD", "bucks": "USD", "euro": "EUR", "euros": "EUR", "eur": "EUR",
    "pound": "GBP", "pounds": "GBP", "sterling": "GBP", "gbp": "GBP", "yen": "JPY", "yuan": "CNY", "renminbi": "CNY",
    "rupee": "INR", "rupees": "INR", "franc": "CHF", "francs": "CHF", "peso": "MXN", "pesos": "MXN",
    "real": "BRL", "reais": "BRL", "won": "KRW", "rouble": "RUB", "roubles": "RUB", "ruble": "RUB", "rubles": "RUB",
    "lira": "TRY", "krona": "SEK", "kronor": "SEK", "krone": "NOK", "kroner": "NOK", "zloty": "PLN", "rand": "ZAR",
    "dirham": "AED", "dirhams": "AED", "shekel": "ILS", "shekels": "ILS", "baht": "THB", "cents": "USD¢",
}
#: a unit word after a number -> (dimension, canonical unit, factor to the canonical unit)
UNITS: dict[str, tuple[str, str, float]] = {
    "%": ("percent", "%", 1.0), "percent": ("percent", "%", 1.0), "pct": ("percent", "%", 1.0),
    "°c": ("temperature", "C", 1.0), "°": ("temperature", "", 1.0), "c": ("temperature", "C", 1.0),
    "celsius": ("temperature", "C", 1.0), "°f": ("temperature", "F", 1.0), "f": ("temperature", "F", 1.0),
    "fahrenheit": ("temperature", "F", 1.0), "degrees": ("temperature", "", 1.0), "degree": ("temperature", "", 1.0),
    "deg": ("temperature", "", 1.0),
    "km": ("length", "m", 1000.0), "kilometers": ("length", "m", 1000.0), "kilometres": ("length", "m", 1000.0),
    "m": ("length", "m", 1.0), "meters": ("length", "m", 1.0), "metres": ("length", "m", 1.0),
    "cm": ("length", "m", 0.01), "mm": ("length", "m", 0.001), "mi": ("length", "m", 1609.344),
    "mile": ("length", "m", 1609.344), "miles": ("length", "m", 1609.344), "ft": ("length", "m", 0.3048),
    "feet": ("length", "m", 0.3048), "foot": ("length", "m", 0.3048),
    "inches": ("length", "m", 0.0254), "yards": ("length", "m", 0.9144),
    "kg": ("mass", "kg", 1.0), "kilograms": ("mass", "kg", 1.0), "kilos": ("mass", "kg", 1.0),
    "g": ("mass", "kg", 0.001), "grams": ("mass", "kg", 0.001), "lb": ("mass", "kg", 0.45359237),
    "lbs": ("mass", "kg", 0.45359237), "oz": ("mass", "kg", 0.028349523),
    "l": ("volume", "l", 1.0), "liters": ("volume", "l", 1.0), "litres": ("volume", "l", 1.0),
    "ml": ("volume", "l", 0.001), "gallons": ("volume", "l", 3.785411784),
    "s": ("duration", "s", 1.0), "sec": ("duration", "s", 1.0), "secs": ("duration", "s", 1.0),
    "seconds": ("duration", "s", 1.0), "second": ("duration", "s", 1.0), "min": ("duration", "s", 60.0),
    "mins": ("duration", "s", 60.0), "minutes": ("duration", "s", 60.0), "minute": ("duration", "s", 60.0),
    "h": ("duration", "s", 3600.0), "hr": ("duration", "s", 3600.0), "hrs": ("duration", "s", 3600.0),
    "hours": ("duration", "s", 3600.0), "hour": ("duration", "s", 3600.0), "days": ("duration", "day", 1.0),
    "day": ("duration", "day", 1.0), "nights": ("nights", "night", 1.0), "night": ("nights", "night", 1.0),
    "weeks": ("duration", "day", 7.0), "week": ("duration", "day", 7.0),
    "kmh": ("speed", "km/h", 1.0), "km/h": ("speed", "km/h", 1.0), "mph": ("speed", "km/h", 1.609344),
    "kb": ("bytes", "B", 1e3), "mb": ("bytes", "B", 1e6), "gb": ("bytes", "B", 1e9), "tb": ("bytes", "B", 1e12),
}
#: multipliers written after a number ("1.2 million", "$3k")
MULTIPLIERS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "mm": 1e6, "million": 1e6, "millions": 1e6,
               "bn": 1e9, "b": 1e9, "billion": 1e9, "trillion": 1e12}
#: words that state a number without a digit or a cardinal ("twice", "a decade"): what a value may be taken from
QUANTITY_WORDS = {"twice": 2.0, "double": 2.0, "pair": 2.0, "couple": 2.0, "both": 2.0, "thrice": 3.0,
                  "triple": 3.0, "dozen": 12.0, "decade": 10.0, "decades": 10.0, "century": 100.0, "fortnight": 14.0,
                  "week": 7.0, "weekly": 7.0, "weekend": 2.0, "month": 30.0, "year": 365.0, "half": 0.5,
                  "quarter": 0.25, "pi": 3.141592653589793, "π": 3.141592653589793, "percent": 100.0,
                  "hour": 60.0, "minute": 60.0, "day": 24.0}
#: words around a number that say it is not exact ("about 92", "~92", "roughly")
HEDGES = frozenset({"about", "around", "approximately", "approx", "roughly", "nearly", "almost", "some", "over",
                    "under", "~", "≈", "circa", "ca", "est", "estimated", "up to", "at least", "at most", "less than",
                    "more than"})
MONTHS = {"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4, "may": 5,
          "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9,
          "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: relative days: today's offset, when one can be given
RELATIVE_DAYS = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1, "day after tomorrow": 2}

#: status words -> (group, axis). Two statements about one thing contradict when they name different groups on a
#: shared axis: "confirmed" and "cancelled" (both outcomes of a booking), not "shipped" and "paid".
STATUS_WORDS: dict[str, tuple[str, tuple[str, ...]]] = {}


def _status(group: str, axes: tuple[str, ...], *words: str) -> None:
    for word in words:
        STATUS_WORDS[word] = (group, axes)


_status("confirmed", ("outcome",), "confirmed", "booked", "reserved", "secured", "approved", "accepted", "granted",
        "successful", "succeeded", "completed", "complete", "processed", "placed", "done", "fulfilled", "issued",
        "finalized", "finalised", "scheduled", "registered", "created", "submitted", "paid", "settled")
_status("cancelled", ("outcome", "delivery"), "cancelled", "canceled", "voided", "revoked", "withdrawn",
        "called off", "terminated")
_status("failed", ("outcome",), "failed", "declined", "rejected", "denied", "refused", "unsuccessful", "bounced")
_status("pending", ("outcome", "delivery"), "pending", "processing", "in progress", "awaiting", "on hold", "queued",
        "under review", "not yet confirmed", "unconfirmed", "tentative", "waitlisted")
_status("shipped", ("delivery",), "shipped", "dispatched", "in transit", "out for delivery")
_status("delivered", ("delivery",), "delivered", "arrived")
_status("returned", ("delivery",), "returned", "exchanged")
_status("refunded", ("refund",), "refunded", "reimbursed", "credited")
_status("available", ("availability",), "available", "in stock", "vacant", "bookable", "open")
_status("unavailable", ("availability",), "unavailable", "sold out", "out of stock", "fully booked", "full",
        "not available", "closed", "no availability", "booked out")
_status("active", ("activity",), "active", "enabled", "valid", "live", "unlocked")
_status("inactive", ("activity",), "inactive", "disabled", "suspended", "expired", "invalid", "blocked",
        "locked", "deactivated", "closed")
_status("on_time", ("schedule",), "on time", "on schedule", "on-time")
_status("delayed", ("schedule",), "delayed", "late", "behind schedule")

#: the group a "not <word>" statement names, where an axis has two sides ("not available" = unavailable)
NEGATED_GROUP = {"available": "unavailable", "unavailable": "available", "active": "inactive", "inactive": "active",
                 "delayed": "on_time", "on_time": "delayed", "confirmed": "pending"}
#: result keys that hold a status, and booleans that state one ({"available": false})
STATUS_KEYS = frozenset({"status", "state", "availability", "booking_status", "order_status", "payment_status",
                         "reservation_status", "flight_status", "delivery_status", "result", "outcome"})
BOOLEAN_STATUS = {"available": ("available", "unavailable"), "in_stock": ("available", "unavailable"),
                  "is_available": ("available", "unavailable"), "confirmed": ("confirmed", "pending"),
                  "is_confirmed": ("confirmed", "pending"), "active": ("active", "inactive"),
                  "is_active": ("active", "inactive"), "cancelled": ("cancelled", "confirmed"),
                  "canceled": ("cancelled", "confirmed"), "refunded": ("refunded", ""), "paid": ("confirmed", ""),
                  "delayed": ("delayed", "on_time"), "on_time": ("on_time", "delayed")}

#: how an answer says something did not work, in any tense: a clause with one of these discloses a failure
FAILURE_WORDS = (
    r"sorry", r"apolog\w*", r"unfortunately", r"regrettably", r"alas", r"oops",
    r"unable", r"fail(?:s|ed|ing|ure|ures)?", r"errors?", r"errored", r"exceptions?", r"unsuccessful(?:ly)?",
    r"un(?:available|reachable|responsive|known|confirmed|determined|verified)", r"impossible", r"invalid",
    r"(?:doesn'?t|does not|didn'?t|did not) exist", r"non-?existent", r"nonexistent",
    r"(?:issue|issues|problem|problems|trouble|glitch|snag|outage|hiccup)s?\b", r"went wrong",
    r"timed? ?out", r"time-?out", r"(?:is|was|are|were|went|seems?|appears?) (?:to be |currently )?(?:down|offline)",
    r"try again", r"retry", r"not (?:found|possible|known|sure|certain|reachable|responding|working|supported|"
    r"recognized|recognised|in our|on record)",
    r"no (?:result|results|data|information|info|record|records|response|reply|match|matches|availability|luck|"
    r"details|answer|forecast|quote|rate|price|prices|weather|flights?|hotels?|access|confirmation|output|value|"
    r"such|entries|items|trace|sign)\b",
    r"nothing (?:was |is |came |has )?(?:found|back|returned|available|came back|showed up|turned up)",
    r"came back empty", r"returned (?:nothing|no |an? error|empty)", r"empty (?:result|response)",
    r"n/a", r"could(?: not|n'?t) be (?:found|retrieved|determined|completed|processed|confirmed|booked|reached)",
    r"rejected", r"declined", r"denied", r"refused", r"not (?:yet )?(?:been )?(?:able|possible)",
)
#: a negation before a verb of getting or completing something: "couldn't get", "was not booked", "didn't go
#: through". A negation alone is no disclosure ("it isn't raining").
NEGATIONS = r"(?:not|n'?t|never|cannot|can ?not|no longer|unable to|failed to)"
COMPLETION_VERBS = (
    "get", "got", "gotten", "getting", "fetch", "fetched", "find", "found", "retrieve", "retrieved", "obtain",
    "obtained", "access", "accessed", "reach", "reached", "connect", "connected", "load", "loaded", "complete",
    "completed", "process", "processed", "confirm", "confirmed", "book", "booked", "place", "placed", "finish",
    "finished", "determine", "determined", "verify", "verified", "look", "looked", "check", "checked", "locate",
    "located", "pull", "pulled", "return", "returned", "go", "gone", "went", "work", "worked", "succeed",
    "succeeded", "make", "made", "handle", "handled", "provide", "provided", "tell", "say", "give", "see",
    "identify", "identified", "read", "send", "sent", "reserve", "reserved", "cancel", "cancelled", "canceled",
    "update", "updated", "create", "created", "execute", "executed", "run", "apply", "applied", "submit",
    "submitted", "pay", "paid", "charge", "charged", "issue", "issued", "secure", "secured", "schedule",
    "scheduled", "transfer", "transferred", "refund", "refunded", "modify", "modified", "change", "changed",
    "have", "know", "come", "came", "show", "showed", "shown", "return", "compute", "computed", "calculate",
    "calculated", "convert", "converted", "receive", "received", "gather", "gathered", "collect", "collected",
)
#: phrases with a failure word that say nothing failed ("no problem", "without any issue")
NOT_FAILURE_PHRASES = (r"no (?:problem|worries|issues?|errors?)\b", r"without (?:any )?(?:issues?|problems?|errors?|"
                       r"trouble|delay)", r"error-?free", r"problem-?free", r"trouble-?free",
                       r"(?:if|should|in case) (?:you )?(?:have|run into|encounter|hit|face|need|want)[^.;!?]*",
                       r"don'?t hesitate[^.;!?]*", r"not hesitate[^.;!?]*", r"let me know[^.;!?]*",
                       r"feel free[^.;!?]*", r"anything else[^.;!?]*")
#: words of a tool's name that name what it does, not what it is about ("get", "tool", "api")
TOOL_NAME_NOISE = frozenset({"get", "set", "fetch", "find", "search", "lookup", "look", "up", "list", "read", "query",
                             "check", "retrieve", "create", "make", "do", "run", "call", "tool", "tools", "api", "func",
                             "function", "by", "for", "from", "to", "of", "the", "a", "an", "and", "or", "with", "new",
                             "add", "update", "delete", "remove", "info", "details", "data", "current", "my", "all",
                             "compute", "calculate", "convert", "send", "book", "cancel", "ask", "request", "submit",
                             "place", "process", "handle", "validate", "verify", "show", "view", "load", "save",
                             "write", "post", "put", "patch", "execute", "invoke", "perform", "plugin", "mcp", "functions"})
STOPWORDS = frozenset({
    "the", "a", "an", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "from", "by", "is", "are",
    "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "as", "i", "you", "we", "they",
    "he", "she", "your", "my", "our", "their", "has", "have", "had", "will", "would", "can", "could", "should",
    "there", "here", "what", "which", "who", "when", "where", "how", "all", "any", "some", "so", "if", "then",
    "than", "also", "just", "now", "not", "no", "yes", "do", "does", "did", "me", "us", "them", "per", "each",
    "into", "about", "up", "out", "over", "after", "before", "new", "please", "let", "know", "found", "got",
})
