#!/usr/bin/env python3
"""Write a deterministic sample shaped like the public Uber NYC pickups of April 2014
(uber-raw-data-apr14.csv): quoted header "Date/Time","Lat","Lon","Base", times like
4/1/2014 0:11:00 in ascending order, positions around Manhattan, the five dispatch bases
with their real shares. Used by the tri-language scenario (RDP_COMPATIBILITY.md §9) and the examples.

    python3 scripts/gen_uber_sample.py [ROWS] > tests/fixtures/uber/uber_apr14_sample.csv
"""
import random
import sys

BASES = ["B02512", "B02598", "B02617", "B02682", "B02764"]
WEIGHTS = [35, 183, 108, 227, 48]  # pickups per base in the real April file (thousands)
# Hot spots: Midtown, Lower Manhattan, Williamsburg, JFK, LaGuardia.
SPOTS = [(40.7549, -73.9840, 0.020, 6), (40.7128, -74.0060, 0.015, 3),
         (40.7081, -73.9571, 0.015, 1), (40.6413, -73.7781, 0.008, 1),
         (40.7769, -73.8740, 0.006, 1)]


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rng = random.Random(20140401)
    out = sys.stdout
    out.write('"Date/Time","Lat","Lon","Base"\n')
    for i in range(rows):
        second = i * (30 * 86400) // rows + rng.randrange(60)
        day, rem = divmod(second, 86400)
        hour, rem = divmod(rem, 3600)
        minute = rem // 60
        lat0, lon0, spread, _ = rng.choices(SPOTS, weights=[s[3] for s in SPOTS])[0]
        lat = round(lat0 + rng.gauss(0, spread), 4)
        lon = round(lon0 + rng.gauss(0, spread * 1.3), 4)
        base = rng.choices(BASES, weights=WEIGHTS)[0]
        out.write(f'"4/{day + 1}/2014 {hour}:{minute:02d}:00",{lat},{lon},"{base}"\n')


if __name__ == "__main__":
    main()
