"""Argument checks declared once per public function, run once per call.

After scikit-learn's ``utils/_param_validation.py``: a public function
declares what each argument may be (:class:`Interval`, :class:`Options`,
:class:`Dosage`, ...) in :func:`validate_params`; the checks run when a user
calls it and are skipped inside it, so a fit that calls other public
functions (maximum likelihood, projection, cross-validation) neither scans
the genotype matrix again nor repeats the other checks. The command line
parses its flags with the same declarations (:meth:`Constraint.parse`), so a
rule such as "``tol`` must be positive" is written once.

Examples
--------
>>> @validate_params({"tol": Interval(float, 0, None, closed="neither")})
... def fit(tol=1e-4):
...     return tol
>>> fit(tol=0.5)
0.5
>>> fit(tol=0)
Traceback (most recent call last):
...
admixspec.core.exceptions.UsageError: tol must be positive, got 0
"""

from __future__ import annotations

import argparse
import contextvars
import functools
import inspect
import numbers

from .exceptions import UsageError

__all__ = [
    "Constraint",
    "Dosage",
    "Each",
    "Frequencies",
    "Increasing",
    "Interval",
    "Mask",
    "Options",
    "SEED",
    "inputs_checked",
    "validate_params",
]

# True inside a validated call: nested public calls trust their arguments.
_CHECKED: contextvars.ContextVar = contextvars.ContextVar("admixspec_checked",
                                                          default=False)


def inputs_checked() -> bool:
    """Whether the caller runs inside a public call whose arguments were checked."""
    return _CHECKED.get()


class Constraint:
    """What one argument may be; ``check(name, value)`` returns the value to use."""

    def check(self, name: str, value):
        """The value to use for argument ``name``, or a :class:`UsageError`."""
        raise TypeError(f"{type(self).__name__} is not a constraint")  # pragma: no cover

    def describe(self) -> str:
        """The rule in words, completing "must ..."."""
        raise TypeError(f"{type(self).__name__} is not a constraint")  # pragma: no cover

    def parse(self, text: str):
        """An argparse ``type``: the text converted and checked (argparse's errors)."""
        try:
            return self.check("value", self.convert(text))
        except UsageError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix("value ")) from None

    def convert(self, text: str):
        """The command-line text as a value of the right type."""
        return text


class Interval(Constraint):
    """A number of type ``kind`` (int or float) between ``low`` and ``high``.

    Parameters
    ----------
    kind : {int, float}
    low, high : number or None
        Bounds; None for no bound.
    closed : {"both", "left", "right", "neither"}
        Which bounds belong to the interval.
    allow_none : bool
        Whether None is accepted (an optional argument).
    finite : bool
        Whether infinity is refused even where no bound excludes it
        (``float("inf")`` parses as a number).
    """

    def __init__(self, kind, low=None, high=None, *, closed: str = "both",
                 allow_none: bool = False, finite: bool = False):
        self.kind, self.low, self.high = kind, low, high
        self.closed, self.allow_none, self.finite = closed, allow_none, finite

    def convert(self, text: str):
        try:
            return self.kind(text)
        except ValueError:
            expected = "an integer" if self.kind is int else "a number"
            raise argparse.ArgumentTypeError(
                f"expected {expected}, got {text!r}") from None

    def check(self, name, value):
        if value is None and self.allow_none:
            return None
        number = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, number):
            raise UsageError(f"{name} must be {self.describe()}, got {value!r}")
        if not self._inside(value):
            raise UsageError(f"{name} must be {self.describe()}, got {value:g}")
        if self.finite and value in (float("inf"), float("-inf")):
            raise UsageError(f"{name} must be finite, got {value:g}")
        return self.kind(value)

    def _inside(self, value) -> bool:
        left = self.closed in ("both", "left")
        right = self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if left
                                         else value > self.low):
            return False
        return self.high is None or (value <= self.high if right else value < self.high)

    def describe(self) -> str:
        word = "an integer" if self.kind is int else "a number"
        if self.high is None and self.low == 0:
            sign = "positive" if self.closed in ("neither", "right") else "non-negative"
            # "seed must be non-negative, got 1.5" hid why 1.5 was refused
            return f"a {sign} integer" if self.kind is int else sign
        if self.high is None:
            relation = ">=" if self.closed in ("both", "left") else ">"
            return f"{word} {relation} {self.low:g}"
        if self.low is None:
            relation = "<=" if self.closed in ("both", "right") else "<"
            return f"{word} {relation} {self.high:g}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"in {left}{self.low:g}, {self.high:g}{right}"


class Options(Constraint):
    """One of a fixed set of values.

    Examples
    --------
    >>> Options("auto", True, False).check("refine", "always")
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: refine must be one of 'auto', True, False;
    got 'always'
    """

    def __init__(self, *values):
        self.values = values

    def check(self, name, value):
        # `is` for True/False: 1 == True, and 1 is not a refine option
        if not any(value is option or (type(value) is type(option) and value == option)
                   for option in self.values):
            raise UsageError(f"{name} must be {self.describe()}; got {value!r}")
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(repr(value) for value in self.values)


class _Numbers(Constraint):
    """Base of the constraints on several numbers, each in ``interval``.

    Parameters
    ----------
    interval : Interval
        What each number may be.
    """

    def __init__(self, interval: Interval):
        self.interval = interval

    def _each(self, name, values):
        """``values`` checked one by one (a tuple); None if one fails or none given."""
        if values is None:
            return None
        try:
            checked = tuple(self.interval.check(name, number) for number in values)
        except UsageError:
            return None
        return checked or None

    def _refuse(self, name, value):
        raise UsageError(f"{name} must be {self.describe()}; got {value!r}")


class Increasing(_Numbers):
    """A non-empty, strictly increasing sequence of numbers, each in ``interval``.

    Examples
    --------
    >>> windows = Increasing(Interval(float, 0, 0.5, closed="right"))
    >>> windows.check("windows", [0.02, 0.05])
    (0.02, 0.05)
    >>> windows.check("windows", (0.1, 0.05))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: windows must be a non-empty, strictly
    increasing sequence of numbers in (0, 0.5]; got (0.1, 0.05)
    """

    def check(self, name, value):
        # a string is a sequence too, and its characters are not numbers
        values = self._each(name, None if isinstance(value, str | bytes)
                            else _as_tuple(value))
        if values is None or any(b <= a for a, b in zip(values, values[1:],
                                                        strict=False)):
            self._refuse(name, value)
        return values

    def describe(self) -> str:
        return ("a non-empty, strictly increasing sequence of numbers "
                f"{self.interval.describe()}")


class Each(_Numbers):
    """A number, or an array_like of numbers, each in ``interval``.

    Examples
    --------
    >>> alpha = Each(Interval(float, 0, closed="neither"))
    >>> alpha.check("alpha", 0.5), alpha.check("alpha", [1, 2]).tolist()
    (0.5, [1.0, 2.0])
    >>> alpha.check("alpha", [1, -2])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: alpha must be positive (a number or an
    array of them); got [1, -2]
    """

    def check(self, name, value):
        if isinstance(value, bool):
            self._refuse(name, value)
        if isinstance(value, numbers.Real):
            return self.interval.check(name, value)
        import numpy as np  # here: the command line's help imports no NumPy

        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            array = None
        if (array is None or isinstance(value, str | bytes)
                or self._each(name, array.ravel()) is None):
            self._refuse(name, value)
        return array

    def describe(self) -> str:
        return f"{self.interval.describe()} (a number or an array of them)"


def _as_tuple(value):
    """``value``'s items as a tuple, or None when it is not iterable."""
    try:
        return tuple(value)
    except TypeError:
        return None


#: A random seed: None (fresh entropy) or a non-negative integer, what
#: :func:`numpy.random.default_rng` takes (a negative one raised NumPy's
#: error from deep inside a fit).
SEED = Interval(int, 0, allow_none=True)


def check_dosage(value):
    """:func:`admixspec.core.genotypes.check_dosage`, imported on first use.

    (The command line parses its flags with this module's constraints, and
    should not pay for pandas to print its help.)
    """
    from .genotypes import check_dosage as check

    return check(value)


class _ArrayConstraint(Constraint):
    """An array argument, None allowed where ``allow_none``; NumPy imported on use.

    Parameters
    ----------
    allow_none : bool
        Whether None is accepted (an optional argument).
    """

    def __init__(self, *, allow_none: bool = False):
        self.allow_none = allow_none

    def check(self, name, value):
        if value is None and self.allow_none:
            return None
        import numpy as np  # here: the command line's help imports no NumPy

        return self._check_array(name, value, np)

    def _check_array(self, name, value, np):
        """The checked array of ``value`` (``np``: NumPy, imported by :meth:`check`)."""
        raise TypeError(f"{type(self).__name__} checks no array")  # pragma: no cover


class Frequencies(_ArrayConstraint):
    """Allele frequencies: a 2-d array of numbers in [0, 1] (SNPs x components).

    Checked, not clipped: the fits clip frequencies into ADMIXTURE's box
    ``[1e-5, 1 - 1e-5]``, which turned 5 (or -0.3) into a frequency and fitted
    on it without a word.

    Parameters
    ----------
    allow_none : bool
        Whether None is accepted (an optional argument).

    Examples
    --------
    >>> Frequencies().check("P", [[0.1, 1.0], [0.0, 0.5]]).shape
    (2, 2)
    >>> Frequencies().check("P", [[0.1, 5.0]])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: P must be allele frequencies, numbers in
    [0, 1]: P[0, 1] = 5 (1 such value)
    """

    def _check_array(self, name, value, np):
        try:
            array = np.array(value, dtype=np.float64, ndmin=2)
        except (TypeError, ValueError):
            raise UsageError(f"{name} must be {self.describe()}, got "
                             f"{type(value).__name__} {value!r:.40}") from None
        if array.ndim != 2:
            raise UsageError(f"{name} must be {self.describe()}, got shape "
                             f"{array.shape}")
        bad = ~((array >= 0.0) & (array <= 1.0))  # NaN is bad too
        if bad.any():
            i, j = np.argwhere(bad)[0]
            n_bad = int(np.count_nonzero(bad))
            raise UsageError(f"{name} must be {self.describe()}: {name}[{i}, {j}] = "
                             f"{array[i, j]:g} ({n_bad} such value"
                             f"{'s' if n_bad > 1 else ''})")
        return array

    def describe(self) -> str:
        return "allele frequencies, numbers in [0, 1]"


class Mask(_ArrayConstraint):
    """A boolean mask over rows: a 1-d array of True/False, returned as a NumPy array.

    Numbers are refused, not taken as truth values: ``[0, 2]`` may as well
    be row indices. Its length is the caller's to check, against its rows.

    Parameters
    ----------
    allow_none : bool
        Whether None is accepted (an optional argument).

    Examples
    --------
    >>> Mask().check("members", [True, False]).tolist()
    [True, False]
    >>> Mask().check("members", [0, 2])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    admixspec.core.exceptions.UsageError: members must be a 1-d array of booleans
    (one True or False per individual); got an array of int64, shape (2,)
    """

    def _check_array(self, name, value, np):
        try:
            array = np.array(value)
        except (TypeError, ValueError):  # ragged
            array = None
        if array is None or array.dtype != np.bool_ or array.ndim != 1:
            got = (f"{value!r:.40}" if array is None else
                   f"an array of {array.dtype}, shape {array.shape}")
            raise UsageError(f"{name} must be {self.describe()}; got {got}")
        return array

    def describe(self) -> str:
        return "a 1-d array of booleans (one True or False per individual)"


class Dosage(Constraint):
    """Genotypes: checked, as a C-contiguous int8 matrix (:func:`check_dosage`).

    This is the one scan of a call's genotype matrix for validation.

    Parameters
    ----------
    streamed : bool
        Whether genotypes left on disk (an object with ``chunks``) pass as they are.
    """

    def __init__(self, *, streamed: bool = False):
        self.streamed = streamed

    def check(self, name, value):
        if self.streamed and hasattr(value, "chunks"):
            return value
        return check_dosage(value)

    def describe(self) -> str:
        return "genotypes (0, 1, 2, -1 missing), individuals x SNPs"


def validate_params(constraints: dict):
    """Decorate a public function: check the declared arguments once per call.

    Parameters
    ----------
    constraints : dict of str to Constraint
        Argument name -> what it may be. Each check may replace the value
        (:class:`Dosage` passes the checked int8 matrix on).

    Returns
    -------
    callable
        The decorator. Inside the decorated call, every other decorated
        function runs without its checks: its caller already checked what it
        passes on.
    """

    def decorate(function):
        signature = inspect.signature(function)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{function.__name__} has no argument(s) {sorted(unknown)}")

        @functools.wraps(function)
        def checked(*args, **kwargs):
            if _CHECKED.get():
                return function(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, constraint in constraints.items():
                bound.arguments[name] = constraint.check(name, bound.arguments[name])
            token = _CHECKED.set(True)
            try:
                return function(*bound.args, **bound.kwargs)
            finally:
                _CHECKED.reset(token)

        return checked

    return decorate
