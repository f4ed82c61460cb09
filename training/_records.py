"""Records turned into prose: invented key-value records (places, products, services) as
JSON, and sentences that state some of their fields (supported), or a changed value or a
field the record does not hold (not supported). Without such pairs a verifier trained on
sentences reads a record restated in prose as unsupported."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

_PLACES = [
    "Maple Street Diner",
    "Blue Harbor Books",
    "Northside Cycles",
    "Casa Verde",
    "The Copper Kettle",
    "Sunrise Dental",
    "Pine Ridge Motel",
    "Luna Noodle Bar",
    "Iron Works Gym",
    "Golden Gate Bakery",
    "Riverside Pet Clinic",
    "Oak & Ash Cafe",
]
_CITIES = [
    ("Tucson", "AZ"),
    ("Reno", "NV"),
    ("Tampa", "FL"),
    ("Boise", "ID"),
    ("Austin", "TX"),
    ("Madison", "WI"),
    ("Portland", "OR"),
    ("Nashville", "TN"),
    ("Denver", "CO"),
]
_CATEGORIES = ["Restaurants", "Breakfast & Brunch", "Books", "Bike Repair", "Mexican",
               "Coffee & Tea", "Dentists", "Hotels", "Noodles", "Gyms", "Bakeries",
               "Veterinarians", "Bars", "Pizza", "Vegan"]  # fmt: skip
_FLAGS = {
    "WiFi": ("offers free WiFi", "has no WiFi"),
    "OutdoorSeating": ("has outdoor seating", "has no outdoor seating"),
    "RestaurantsTakeOut": ("offers takeout", "does not offer takeout"),
    "RestaurantsReservations": ("takes reservations", "does not take reservations"),
    "GoodForKids": ("is good for kids", "is not a place for kids"),
    "BusinessAcceptsCreditCards": ("accepts credit cards", "does not accept credit cards"),
    "DogsAllowed": ("allows dogs", "does not allow dogs"),
}
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _record(rng: random.Random) -> dict[str, object]:
    city, state = rng.choice(_CITIES)
    opens, closes = rng.randint(6, 11), rng.randint(17, 23)
    flags = {k: rng.random() < 0.6 for k in rng.sample(list(_FLAGS), rng.randint(2, 5))}
    return {
        "name": rng.choice(_PLACES),
        "city": city,
        "state": state,
        "stars": rng.choice([2.5, 3.0, 3.5, 4.0, 4.5, 5.0]),
        "review_count": rng.randint(5, 900),
        "categories": ", ".join(rng.sample(_CATEGORIES, rng.randint(1, 3))),
        "hours": {d: f"{opens}:0-{closes}:0" for d in rng.sample(_DAYS, rng.randint(3, 7))},
        "attributes": flags,
    }


def _facts(rec: dict[str, object], rng: random.Random) -> list[tuple[str, bool]]:
    """(sentence, supported) statements about ``rec``: each true one and a false twin."""
    name, city, state = rec["name"], rec["city"], rec["state"]
    stars, count = rec["stars"], rec["review_count"]
    assert isinstance(stars, float) and isinstance(count, int)
    other_city = rng.choice([c for c, _ in _CITIES if c != city])
    facts = [
        (f"{name} is located in {city}, {state}.", True),
        (f"{name} is located in {other_city}.", False),
        (f"It has a rating of {stars} stars based on {count} reviews.", True),
        (f"It has a rating of {stars + rng.choice([-1.0, -0.5, 0.5])} stars.", False),
        (f"Customers have left {count} reviews.", True),
        (f"Customers have left {count + rng.randint(10, 90)} reviews.", False),
        (f"The business falls under {rec['categories']}.", True),
        (f"The business also sells {rng.choice(_CATEGORIES).lower()} supplies.", False),
    ]
    hours = rec["hours"]
    assert isinstance(hours, dict)
    day = rng.choice(list(hours))
    opens, closes = (int(t.split(":")[0]) for t in hours[day].split("-"))
    facts.append((f"On {day} it opens at {opens} am and closes at {closes - 12} pm.", True))
    facts.append((f"On {day} it opens at {opens} am and closes at {closes - 11} pm.", False))
    closed = [d for d in _DAYS if d not in hours]
    if closed:
        facts.append((f"It is open on {closed[0]}.", False))
    attributes = rec["attributes"]
    assert isinstance(attributes, dict)
    for key, value in attributes.items():
        yes, no = _FLAGS[key]
        facts.append((f"The place {yes if value else no}.", True))
        facts.append((f"The place {no if value else yes}.", False))
    missing = [k for k in _FLAGS if k not in attributes]
    if missing:
        facts.append((f"The place {_FLAGS[rng.choice(missing)][0]}.", False))
    return facts


def record_pairs(n: int, rng: random.Random) -> Iterator[dict[str, object]]:
    """``n`` records, each with one supported and one unsupported statement (single facts
    or two facts joined, as a written overview combines them)."""
    for _ in range(n):
        rec = _record(rng)
        evidence = json.dumps(rec)
        facts = _facts(rec, rng)
        true = [f for f, ok in facts if ok]
        false = [f for f, ok in facts if not ok]
        for label, pool in ((1, true), (0, false)):
            claim = rng.choice(pool)
            if rng.random() < 0.4:
                claim = f"{rng.choice(true).rstrip('.')}, and {claim[0].lower()}{claim[1:]}"
            yield {"claim": claim, "evidence": evidence, "label": label, "kind": "records"}
