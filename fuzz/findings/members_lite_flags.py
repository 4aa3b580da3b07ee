"""Finding 6 (class 4, members): ``Members(lite=...)`` took any truthy value as a flag.

``Members(["a:1"], lite=["false"])`` made the member lite (a non-empty string is
truthy); ``None``, ``2`` and ``0.5`` were converted the same way. Expected: TypeError
naming ``lite[i]`` (bools, numpy bools, and 0/1 are the flags). Fixed in the members
validator (c971345 and before).
"""
import hzfast
from fuzz.findings._util import main, report


def run() -> int:
    calls = {f"lite=[{v!r}]": (lambda v=v: hzfast.Members(["a:1"], lite=[v]).lite.tolist())
             for v in ("false", "true", None, 2, 0.5)}
    return report(__doc__.splitlines()[0], calls, lambda kind, _: kind in ("TypeError",
                                                                            "ValueError"))


if __name__ == "__main__":
    main(run())
