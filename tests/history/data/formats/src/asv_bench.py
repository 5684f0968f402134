"""asv fixture source: a timing and a tracked value."""


def time_sum():
    sum(range(1000))


def time_sorted():
    sorted(range(500, 0, -1))


def track_answer():
    return 42


track_answer.unit = "widgets"
