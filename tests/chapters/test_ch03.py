"""Chapter 3 specifics: hidden inputs are not the public ones, and the hidden runs end both
on a partial cycle and on an exact multiple (the shared contract is in test_contract.py)."""

from autograder.chapters.ch03 import hidden
from autograder.chapters.ch03 import student as public
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan

reference = load_reference("ch03")


def grade(exercise, function, student="alumna"):
    return grade_hidden(exercise, hidden.HIDDEN, function, student, secret="pruebas")


def test_hidden_runs_have_two_partial_final_cycles_and_one_exact_multiple():
    # The exact multiple catches an unconditional step after the loop (an extra step, or a
    # division by zero); the partial cycles catch a forgotten or mis-scaled last cycle.
    for student in ("alumna", "alumno", "otra"):
        shapes = [s for s, _ in plan("train_with_accumulation", hidden.HIDDEN, student, "pruebas")]
        assert all(batches // accum >= 2 for _, batches, _, accum, *_ in shapes)
        remainders = [(batches % accum, accum) for _, batches, _, accum, *_ in shapes]
        assert sum(remainder == 0 for remainder, _ in remainders) == 1
        assert all(2 * remainder != accum for remainder, accum in remainders if remainder)


def test_clipping_cases_include_one_that_does_not_clip():
    ratios = [shape[-1] for shape, _ in plan("clipped_step", hidden.HIDDEN, "a", "s")]
    assert any(r < 1 for r in ratios) and any(r > 1 for r in ratios)


def test_hidden_inputs_differ_from_the_public_ones():
    seen = {"public": set(), "hidden": set()}

    def spy_for(kind):
        def accumulate_gradients(model, loss_fn, x, y, accum):
            seen[kind].add((tuple(x.shape), x.flatten()[0].item()))
            return reference.accumulate_gradients(model, loss_fn, x, y, accum)
        return accumulate_gradients

    public.comprobar_accumulate_gradients(spy_for("public"))
    grade("accumulate_gradients", spy_for("hidden"))
    assert seen["public"] and seen["hidden"] and not seen["public"] & seen["hidden"]
