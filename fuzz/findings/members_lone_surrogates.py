"""Finding 10 (class 4, members): text with unpaired surrogates did not round-trip JSON.

``Members(["a:1"], hosts=["\\udcdc\\udc41\\ud82c\\udcdc"])`` was accepted, but
``Members.from_json(m.to_json())`` gave another registry: ``json.dumps`` escapes the lone
surrogates one by one and ``json.loads`` joins the escaped pair ``\\ud82c\\udcdc`` into one
character, U+1B0DC. Expected: ValueError naming the field, for every text column (UTF-8
cannot encode such a string, so no file, JSON document or Arrow array can carry it
faithfully). Found by the ``table`` target in CI (e4f234f); fixed in the members validator.
"""
import hzfast
from fuzz.findings._util import main, report

TEXTS = {"hosts": "\udcdc\udc41\ud82c\udcdc", "zones": "\ud800", "groups": "x\udc80",
         "uuids": "\udfff", "addresses": "h\ud83d:1"}


def build(field: str, text: str) -> object:
    if field == "addresses":
        return hzfast.Members([text])
    m = hzfast.Members(["a:1"], **{field: [text]})
    back = hzfast.Members.from_json(m.to_json())
    return f"round-trips: {back == m}"


def run() -> int:
    calls = {f"{field}=[{text!r}]": (lambda f=field, t=text: build(f, t))
             for field, text in TEXTS.items()}
    calls["from_json with an escaped lone surrogate"] = lambda: hzfast.Members.from_json(
        '{"addresses": ["a:1"], "zones": ["\\ud800"]}').zones
    return report(__doc__.splitlines()[0], calls, lambda kind, _: kind == "ValueError")


if __name__ == "__main__":
    main(run())
