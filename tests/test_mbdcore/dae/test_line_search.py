"""The backtracking line search of the implicit integrators' Newton iteration
(``line_search=True``, issue 24; docs/step_control.md, "Line search")."""
import numpy as np
import pytest

from mbdcore.dae.methods import make_method
from mbdcore.dae.simulate import simulate
from mbdcore.models.mechanisms import slider_crank
from support.models import CartesianPendulum, thrown_on_slack_cable


@pytest.mark.parametrize("iteration", ["modified", "newton"])
def test_where_plain_newton_converges_the_search_changes_nothing(iteration):
    """Every full Newton step lowers the residual on the pendulum (Python iteration)
    and on the slider-crank (full Newton: Python iteration; modified: the C iterations,
    which have no search): no step is cut and the runs are bit for bit the plain ones."""
    pendulum = CartesianPendulum()
    q0, v0 = pendulum.state_from_angle(1.0, 0.0)
    runs = [(lambda **o: simulate(pendulum, 0.3, 0.01, "generalized-alpha", q0=q0, v0=v0,
                                  assemble_initial=False, iteration=iteration, **o)),
            (lambda **o: simulate(slider_crank(), 0.3, 0.01, "generalized-alpha",
                                  inputs=lambda t: {"tau": 5.0}, iteration=iteration, **o))]
    for run in runs:
        plain, searched = run(), run(line_search=True)
        assert np.array_equal(plain.q, searched.q) and np.array_equal(plain.v, searched.v)
        assert searched.stats["line_search_cuts"] == 0
        assert searched.stats["newton_iterations"] == plain.stats["newton_iterations"]


def test_a_cable_snapping_taut_needs_no_retried_solve_with_the_search():
    """The 50 g mass on the slack Kevlar-like cable (test_step_control) with fixed 10 ms
    steps and full Newton: without the search one solve fails and is repeated with a
    fresh matrix; with it, steps are cut (counted) and no solve fails; the same
    solution (the velocity 50 ms after the catch to 1e-9 m/s).  (At 5 ms the plain
    iteration's failure came and went with the rounding of which Gauss point counts as
    taut at the snap: the active set is classified in C since, by the force kernel's
    own operations.)"""
    runs = {}
    for search in (False, True):
        system, _, body, q0, v0 = thrown_on_slack_cable((1.0, 0.0, 0.0), mass=0.05,
                                                        ea=8.8e4, rho_a=1.13e-3)
        r = simulate(system, 0.25, 1e-2, "generalized-alpha", rho_inf=1.0, q0=q0, v0=v0,
                     max_halvings=0, iteration="newton", sparse=True, line_search=search)
        runs[search] = (r.stats, r.v[-1, body.index])
    assert runs[False][0]["failures"] >= 1 and runs[True][0]["failures"] == 0
    assert runs[True][0]["line_search_cuts"] > 0
    assert runs[True][1] == pytest.approx(runs[False][1], abs=1e-9)


def test_line_search_options_are_checked():
    with pytest.raises(ValueError, match="line_search = 1: accepted True or False"):
        make_method("generalized-alpha", line_search=1)
    with pytest.raises(ValueError, match="cannot be used with iteration='broyden'"):
        make_method("generalized-alpha", line_search=True, iteration="broyden")
