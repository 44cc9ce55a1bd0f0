"""Compares a candidate's logits (e.g. hetc's) with the reference's, row by row (one row per position)."""

import argparse
import sys

import numpy as np


def compare(reference, candidate, atol, rtol):
    """Returns (report lines, passed). A row fails when some |candidate - reference|
    exceeds atol + rtol * max|reference row|, or when its argmax differs although the
    reference's top two logits are further apart than that tolerance (a closer pair is
    a near-tie that float32 rounding may legitimately flip)."""
    lines = []
    if reference.ndim != 2 or reference.shape != candidate.shape:
        return [f"shape mismatch: reference {reference.shape}, candidate {candidate.shape}"], False
    reference = reference.astype(np.float64)
    candidate = candidate.astype(np.float64)
    if not np.all(np.isfinite(candidate)):
        bad_row = int(np.argmax(~np.all(np.isfinite(candidate), axis=1)))
        return [f"candidate has non-finite logits, first in row {bad_row}"], False

    difference = np.abs(candidate - reference)
    row_max_difference = difference.max(axis=1)
    row_tolerance = atol + rtol * np.abs(reference).max(axis=1)
    over_tolerance = row_max_difference > row_tolerance

    top_two = np.sort(reference, axis=1)[:, -2:]
    decisive = (top_two[:, 1] - top_two[:, 0]) > row_tolerance
    argmax_differs = np.argmax(reference, axis=1) != np.argmax(candidate, axis=1)
    failing_argmax = argmax_differs & decisive

    worst_row = int(np.argmax(row_max_difference))
    lines.append(f"rows {reference.shape[0]}, vocab {reference.shape[1]}")
    lines.append(f"max |diff| {row_max_difference.max():.3e} (row {worst_row}, "
                 f"column {int(np.argmax(difference[worst_row]))}), "
                 f"mean |diff| {difference.mean():.3e}")
    lines.append(f"argmax agrees in {int(np.sum(~argmax_differs))} of {reference.shape[0]} rows"
                 + (f" ({int(np.sum(argmax_differs & ~decisive))} differing rows are near-ties)"
                    if np.any(argmax_differs & ~decisive) else ""))
    if np.any(over_tolerance):
        row = int(np.argmax(over_tolerance))
        lines.append(f"first row over tolerance: {row} (max |diff| {row_max_difference[row]:.3e} "
                     f"> {row_tolerance[row]:.3e}); {int(over_tolerance.sum())} rows in all")
    if np.any(failing_argmax):
        row = int(np.argmax(failing_argmax))
        lines.append(f"first row with a different argmax: {row} (reference "
                     f"{int(np.argmax(reference[row]))}, candidate {int(np.argmax(candidate[row]))})")
    passed = not np.any(over_tolerance) and not np.any(failing_argmax)
    return lines, passed


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("reference", help="logits .npy written by gguf_reference.py --logits-out")
    parser.add_argument("candidate", help="logits .npy of the same positions from the system under test")
    parser.add_argument("--atol", type=float, default=1e-3, help="absolute tolerance (default 1e-3)")
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="tolerance relative to the row's largest |reference logit| (default 0)")
    parser.add_argument("--rows", metavar="START:END",
                        help="compare only candidate-covered reference rows START..END-1")
    args = parser.parse_args()

    reference = np.load(args.reference)
    candidate = np.load(args.candidate)
    if args.rows:
        start, end = (int(part) if part else None for part in args.rows.split(":"))
        reference = reference[start:end]
    lines, passed = compare(reference, candidate, args.atol, args.rtol)
    for line in lines:
        print(line)
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
