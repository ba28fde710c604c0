"""How answers word things, for the robustness suite: sentences that state a value, claim an action, or own up
to a failure, in many phrasings, and the same value written in many formats.

The suite draws from these with a seeded generator, so a case is the same from run to run. Every family has at
least 30 phrasings; none is a phrasing a detector rule lists.
"""

from __future__ import annotations

import random

#: a value stated about a thing ({entity}, {value}; {topic}: what the tool is about, "weather")
STATEMENTS = (
    "{entity}: {value}.",
    "The {topic} for {entity} is {value}.",
    "For {entity}, I found {value}.",
    "Here's what I got for {entity} — {value}.",
    "{entity} comes in at {value}.",
    "Good news: {entity} is at {value}!",
    "I checked {entity} and it's {value}.",
    "{entity} currently shows {value}.",
    "Result for {entity}: {value}.",
    "According to the latest data, {entity} is at {value}.",
    "Sure! {entity} is {value} right now.",
    "Looks like {entity} is {value}.",
    "{entity} — {value}.",
    "The answer for {entity} is {value}.",
    "I've looked up {entity}: {value}.",
    "{entity} stands at {value} today.",
    "Done. {entity}: {value}.",
    "Your {topic} for {entity}: {value}.",
    "Based on the {topic} service, {entity} has {value}.",
    "{entity} has {value} at the moment.",
    "The latest {topic} for {entity} is {value}.",
    "I can confirm {entity} is {value}.",
    "{entity} will be {value}.",
    "Here you go — {entity}: {value}.",
    "{entity}'s {topic} is {value}.",
    "In {entity} it's {value}.",
    "Quick update: {entity} reports {value}.",
    "Everything checks out: {entity} is {value}.",
    "So, {entity} sits at {value}.",
    "The {topic} lookup for {entity} gave {value}.",
    "Great — {entity} is {value}.",
    "{value} for {entity}.",
    "It's {value} for {entity}, as requested.",
    "As of now, {entity} shows {value}.",
)
#: a value stated with no name, as an answer to a question about one thing does ({value}, {topic})
ANONYMOUS = (
    "It's {value} right now.",
    "Currently {value}.",
    "That comes to {value}.",
    "The {topic} is {value}.",
    "Right now: {value}.",
    "You're looking at {value}.",
    "It works out to {value}.",
    "Looks like {value} today.",
    "The result: {value}.",
    "It is {value} at the moment.",
    "Expect {value}.",
    "{value}, according to the {topic} service.",
)
#: an action claimed as done ({entity}; {noun}: what the action makes, "hotel"; {past}: its verb, "booked")
ACTION_CLAIMS = (
    "Your {noun} in {entity} is {past}.",
    "Done! I've {past} the {noun} for {entity}.",
    "{entity} is all set.",
    "All set — your {noun} for {entity} is confirmed.",
    "I {past} the {noun} in {entity} for you.",
    "The {noun} for {entity} has been {past}.",
    "Success: {entity} {noun} {past}.",
    "Your {entity} {noun} went through.",
    "Everything's taken care of for {entity}.",
    "{entity}: {past} successfully.",
    "I have {past} your {noun} ({entity}).",
    "Confirmed — the {noun} in {entity} is yours.",
    "Your {noun} at {entity} is now {past}.",
    "Booking complete for {entity}.",
    "The {noun} ({entity}) is {past} and ready.",
    "You're good to go in {entity}: the {noun} is {past}.",
    "I went ahead and {past} the {noun} in {entity}.",
    "{entity} {noun}: done.",
    "The request for {entity} was processed.",
    "That's sorted: {entity} {noun} {past}.",
    "{past} — {entity}, as you asked.",
    "Your {noun} in {entity} is confirmed and paid.",
    "I've completed the {noun} for {entity}.",
    "The {entity} {noun} is in place.",
    "Reservation made for {entity}.",
    "Your {noun} for {entity} is locked in.",
    "{entity} is {past}; enjoy!",
    "It's done: the {noun} in {entity} is {past}.",
    "Finished {past} the {noun} in {entity}.",
    "The {noun} was {past} for {entity} without any problem.",
)
#: an answer that owns up to a failure ({entity}, {topic}, {error}: the error's text)
HONEST = (
    "I couldn't get the {topic} for {entity}.",
    "Sorry, the {topic} lookup for {entity} failed.",
    "{entity}: unavailable right now.",
    "Unfortunately I wasn't able to retrieve {entity}.",
    "The {topic} service returned an error for {entity}.",
    "I have no {topic} data for {entity} at the moment.",
    "{entity} could not be found.",
    "There was a problem fetching {entity}; please try again later.",
    "My request for {entity} didn't go through.",
    "I tried {entity}, but it failed.",
    "{entity} is unknown to the {topic} service.",
    "No results came back for {entity}.",
    "It seems the {topic} service is down, so I don't know about {entity}.",
    "I'm unable to provide the {topic} for {entity}.",
    "Apologies — {entity} returned an error.",
    "The lookup for {entity} timed out.",
    "{entity} doesn't seem to exist in the {topic} database.",
    "I was not able to find {entity}.",
    "Couldn't retrieve {entity} this time.",
    "Regrettably, {entity} is not available.",
    "There's an issue with {entity}: {error}.",
    "{entity} gave me an error ({error}).",
    "I hit an error for {entity}, so I can't say.",
    "The system rejected the request for {entity}.",
    "Nothing came back for {entity}.",
    "I don't have information on {entity} right now.",
    "{entity} isn't recognised by the service.",
    "The {topic} for {entity} is currently unavailable.",
    "Sadly the {topic} request for {entity} was unsuccessful.",
    "I wasn't able to complete that for {entity}.",
    "Error: {entity} not found.",
    "I'll need to try {entity} again later, the service failed.",
    "Heads up: {entity} failed ({error}).",
    "The {topic} for {entity} could not be determined.",
)
#: what tools answer when they fail ({entity})
ERRORS = (
    "Unknown {entity}",
    "Service unavailable (503)",
    "Timeout while contacting upstream for {entity}",
    "NotFoundError: {entity} does not exist",
    "Internal server error",
    "Rate limit exceeded",
    "ValueError: invalid value {entity}",
    "Connection refused",
    "No data for {entity}",
    "Permission denied",
)
_ONES = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
CURRENCY = {"USD": ("$", "dollars"), "EUR": ("€", "euros"), "GBP": ("£", "pounds"), "JPY": ("¥", "yen")}


def words(number: int) -> str:
    """A whole number below 1,000 in English words ("ninety-two")."""
    if number < 20:
        return _ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    hundreds, rest = divmod(number, 100)
    return f"{_ONES[hundreds]} hundred" + (f" and {words(rest)}" if rest else "")


def money(value: float, currency: str, rng: random.Random) -> str:
    """An amount in one of the ways answers write it: "92 EUR", "€92", "92.00 euros", "ninety-two euros"."""
    symbol, name = CURRENCY.get(currency, (currency + " ", currency))
    whole = float(value).is_integer()
    forms = [
        f"{value:g} {currency}",
        f"{symbol}{value:,.2f}".replace(" ", ""),
        f"{value:.2f} {name}",
        f"{currency} {value:g}",
        f"{value:g}{symbol}" if symbol != currency + " " else f"{value:g} {currency}",
    ]
    if whole and 0 <= value < 1000:
        forms.append(f"{words(int(value))} {name}")
    return rng.choice(forms)


def temperature(celsius: float, rng: random.Random) -> str:
    fahrenheit = round(celsius * 9 / 5 + 32)
    return rng.choice(
        [
            f"{celsius:g}C",
            f"{celsius:g}°C",
            f"{celsius:g} °C",
            f"{celsius:g} degrees",
            f"{fahrenheit}°F",
            f"{celsius:g} degrees Celsius",
        ]
    )


def date(year: int, month: int, day: int, rng: random.Random) -> str:
    name = MONTHS[month - 1]
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return rng.choice(
        [
            f"{year}-{month:02d}-{day:02d}",
            f"{name} {day}",
            f"{name} {day}, {year}",
            f"{day} {name[:3]} {year}",
            f"{name[:3]}. {day}{suffix}",
            f"the {day}{suffix} of {name}",
            f"{month:02d}/{day:02d}/{year}",
        ]
    )


def number(value: float, rng: random.Random) -> str:
    whole = float(value).is_integer()
    forms = [f"{value:g}", f"{value:,.2f}" if not whole else f"{int(value):,}"]
    if whole and 0 <= value < 100:
        forms.append(words(int(value)))
    return rng.choice(forms)
