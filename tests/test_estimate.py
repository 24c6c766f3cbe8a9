"""rapier_app.core.estimate: the size estimates of flows of unknown size."""

import math

import pytest

from rapier_app.core.estimate import (FACTOR, FLOOR_BYTES, estimate_size, initial_estimate,
                                      next_estimate)


def test_initial_estimate_floor_and_siblings():
    assert initial_estimate() == FLOOR_BYTES == 10_000_000
    assert initial_estimate([None, None]) == FLOOR_BYTES
    assert initial_estimate([1_000, 2_000]) == FLOOR_BYTES          # smaller: the floor
    assert initial_estimate([30e6, None, 50e6]) == 40e6              # the known ones' mean
    assert initial_estimate([], floor_bytes=5) == 5.0


def test_next_estimate_doubles_past_the_bytes_sent():
    assert FACTOR == 2.0
    assert next_estimate(0, 10e6) == 10e6
    assert next_estimate(9_999_999, 10e6) == 10e6                    # below: stands
    assert next_estimate(10e6, 10e6) == 20e6                         # reached: doubles
    assert next_estimate(45e6, 10e6) == 80e6                         # several at once
    assert next_estimate(45e6, 10e6, factor=10) == 100e6
    for sent in (0, 1, 12345, 7e9):
        e = next_estimate(sent, 3e6)
        assert e > sent and e >= 3e6 and math.log2(e / 3e6) == int(math.log2(e / 3e6))


def test_estimate_size_is_stateless():
    assert estimate_size(0) == FLOOR_BYTES
    assert estimate_size(25e6, [30e6]) == 30e6 and estimate_size(35e6, [30e6]) == 60e6
    assert estimate_size(25e6, [30e6]) == next_estimate(25e6, initial_estimate([30e6]))


@pytest.mark.parametrize("call,field", [
    (lambda: initial_estimate(floor_bytes=0), "floor_bytes"),
    (lambda: initial_estimate(floor_bytes=math.inf), "floor_bytes"),
    (lambda: next_estimate(1, 0), "estimate"),
    (lambda: next_estimate(1, 10, factor=1), "factor"),
    (lambda: next_estimate(math.inf, 10), "sent_bytes"),
    (lambda: next_estimate(math.nan, 10), "sent_bytes"),
])
def test_bad_arguments_name_the_field(call, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        call()
