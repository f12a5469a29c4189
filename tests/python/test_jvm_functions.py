"""The JVM marking functions (jvm/functions) give the text of the regular expressions they replace.

macros/utils/cdc_json.sql marks exact JSON numbers either with ``cdc_lakehouse.json.mark`` /
``unmark`` (the default) or with regular expressions (``cdc_jvm_functions: false``, and always
in the typed gold views). Both are compiled here by dbt itself and run side by side in Spark on
messages with every kind of token, escape and malformation.
"""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT

#: (name, JSON text): valid messages and the malformed text a topic can carry.
TEXTS = [
    ("all tokens", '{"a": 1, "b": -2.5e+10, "c": true, "d": false, "e": null, "f": [1, 2.50, {"g": 0}]}'),
    ("numbers in strings", '{"s": "x 1 true -3", "n": 65, "k": "12"}'),
    ("escapes", r'{"q": "a \"1\" \\", "b": "\\", "u": "\u00e9 2", "n": 7}'),
    ("exact decimals",
     '{"p": 9.999999999999999093266253, "big": 12345678901234567890123456789012345678901234567890.5}'),
    ("a string of one NUL", r'{"nul": "\u0000", "n": 1, "t": true}'),
    ("a marked-looking string", r'{"s": "\u0000true", "n": -0}'),
    ("unicode", '{"ü": "😀 \u2028 中", "x": [1, {"y": 3}]}'),
    ("unterminated string", '{"a": "abc 12, "b": 3'),
    ("backslash before a line break", '{"a": "x\\\n1", "b": 2}'),
    ("bare words", '{"a": -x, "b": --5, "c": truex, "d": nulltrue, "e": 1e}'),
    ("whitespace", '{\n  "a" :\t-1 ,\r\n  "b": [ true ,false ]\n}'),
    ("not an object", '42'),
    ("empty", ''),
]


def _compiled_expression(macro_call: str, jvm: bool) -> str:
    """The SQL of ``macro_call`` as dbt compiles it, with or without the JVM functions."""
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke([
        "compile", "--inline", f"select {{{{ {macro_call} }}}} as out from texts",
        "--vars", json.dumps({"cdc_jvm_functions": jvm}),
        "--profiles-dir", str(PROJECT / "profiles"), "--project-dir", str(PROJECT), "--quiet",
    ])
    assert result.success, result.exception
    return result.result.results[0].node.compiled_code


@pytest.fixture(scope="module")
def texts(_shared_lakehouse):
    spark = _shared_lakehouse.spark
    spark.createDataFrame(TEXTS + [("null", None)], "name string, text string").createOrReplaceTempView("texts")
    return spark


def _outputs(spark, macro_call: str, jvm: bool) -> dict[str, str | None]:
    query = _compiled_expression(macro_call, jvm).replace("select", "select name,", 1)
    return {r["name"]: r["out"] for r in spark.sql(query).collect()}


def test_the_parsers_call_the_jvm_functions_by_default(texts):
    assert "cdc_lakehouse.json.mark(text)" in _compiled_expression("cdc_mark_json('text')", jvm=True)
    assert "regexp_replace" in _compiled_expression("cdc_mark_json('text')", jvm=False)
    # the typed gold views are read by any Spark: never the JVM functions
    assert "regexp_replace" in _compiled_expression("cdc_mark_json('text', portable=true)", jvm=True)


def test_mark_gives_the_regex_text(texts):
    jvm = _outputs(texts, "cdc_mark_json('text')", jvm=True)
    regex = _outputs(texts, "cdc_mark_json('text')", jvm=False)
    assert jvm == regex
    assert jvm["all tokens"] == (
        r'{"a": "\u00001", "b": "\u0000-2.5e+10", "c": "\u0000true", "d": "\u0000false", "e": null, '
        r'"f": ["\u00001", "\u00002.50", {"g": "\u00000"}]}')
    assert jvm["numbers in strings"] == r'{"s": "x 1 true -3", "n": "\u000065", "k": "12"}'
    assert jvm["null"] is None


def test_unmark_gives_the_regex_text_and_the_original_back(texts):
    jvm = _outputs(texts, "cdc_unmark_json(cdc_mark_json('text'))", jvm=True)
    regex = _outputs(texts, "cdc_unmark_json(cdc_mark_json('text'))", jvm=False)
    assert jvm == regex
    originals = dict(TEXTS)
    # every text comes back, but a genuine string that looks like a marked value (known, documented)
    assert {k: v for k, v in jvm.items() if k not in ("a marked-looking string", "null")} == {
        k: v for k, v in originals.items() if k != "a marked-looking string"}
    assert jvm["a marked-looking string"] == '{"s": true, "n": -0}'


def test_exact_numbers_survive_parsing(texts):
    parsed = _outputs(texts, "cdc_image_map(cdc_mark_json('text'))", jvm=True)["exact decimals"]
    assert {k: v.lstrip("\0") for k, v in parsed.items()} == {
        "p": "9.999999999999999093266253",
        "big": "12345678901234567890123456789012345678901234567890.5"}


def test_adjacent_tokens_stay_invalid_json(texts):
    """The one difference: the regex's three passes (a message holding "\\u0000") would join
    `1true` into one marked string and so turn invalid JSON into valid; the JVM keeps it invalid."""
    texts.createDataFrame([("adjacent", r'{"a": 1true, "nul": "\u0000"}')], "name string, text string") \
        .createOrReplaceTempView("texts")
    try:
        jvm = _outputs(texts, "cdc_mark_json('text')", jvm=True)["adjacent"]
        regex = _outputs(texts, "cdc_mark_json('text')", jvm=False)["adjacent"]
    finally:
        texts.createDataFrame(TEXTS + [("null", None)], "name string, text string").createOrReplaceTempView("texts")
    assert regex == r'{"a": "\u00001true", "nul": "\u0000"}'
    assert jvm == r'{"a": "\u00001""\u0000true", "nul": "\u0000"}'
    parsed = texts.createDataFrame([(jvm,)], "text string").selectExpr("from_json(text, 'map<string,string>') as m")
    assert parsed.first()["m"] is None


#: Images whose shape must parse as they do: strict JSON, and what only Spark's lenient reader takes.
SHAPE_TEXTS = [
    ("flat", '{"id": 7, "name": "x", "note": null, "ok": false}'),
    ("nested values", '{"doc": {"a": [1, {"b": null}], "c": "}"}, "arr": [], "obj": {}, "n": null}'),
    ("escaped names", r'{"a\"b": 1, "\u00e9": null, "k\\": "v"}'),
    ("an empty object", "{}"),
    ("spaced", ' {\t"a" : null ,\n "b" : -0.5e-3 } \n'),
    ("a key with an escape", r'{"ab": 1, "a\u0062c": 2}'),
    ("single quotes", "{'a': 1, 'b': null}"),
    ("NaN", '{"a": NaN, "b": null}'),
    ("a leading zero", '{"a": 01, "b": null}'),
    ("after the object", '{"a": 1} x'),
    ("a raw control character", '{"a": "x\u0001y", "b": null}'),
    ("an invalid escape", r'{"a": "\x", "b": null}'),
    ("an array", "[1, 2]"),
    ("a trailing comma", '{"a": 1,}'),
]


def _keys_and_nulls(spark, expression: str, jvm: bool) -> dict[str, tuple]:
    """Per text: the keys of from_json(expression) in order, and those whose value is null."""
    query = _compiled_expression(expression, jvm).replace("select", "select name,", 1)
    # the keys' order from SQL: Python receives a map as a dict built from a hash map
    parsed = spark.sql(
        "select name, map_keys(m) as keys, map_keys(map_filter(m, (k, v) -> v is null)) as nulls "
        f"from (select name, from_json(out, 'map<string,string>') as m from ({query}))").collect()
    return {r["name"]: None if r["keys"] is None else (r["keys"], r["nulls"]) for r in parsed}


def test_a_shape_parses_to_the_keys_and_nulls_of_its_image(texts):
    texts.createDataFrame(TEXTS + SHAPE_TEXTS + [("null", None)], "name string, text string") \
        .createOrReplaceTempView("texts")
    try:
        images = _keys_and_nulls(texts, "'text'", jvm=True)
        jvm = _keys_and_nulls(texts, "cdc_image_shape('text')", jvm=True)
        portable = _keys_and_nulls(texts, "cdc_image_shape('text')", jvm=False)
        shapes = _outputs(texts, "cdc_image_shape('text')", jvm=True)
    finally:
        texts.createDataFrame(TEXTS + [("null", None)], "name string, text string").createOrReplaceTempView("texts")
    assert jvm == images
    assert portable == images
    assert images["nested values"] == (["doc", "arr", "obj", "n"], ["n"])
    assert images["single quotes"] == (["a", "b"], ["b"])  # Spark's reader takes it: the JVM hands the text on
    # strict JSON becomes its small shape; anything else is handed on as it is
    assert shapes["flat"] == '{"id":1,"name":1,"note":null,"ok":1}'
    assert shapes["escaped names"] == r'{"a\"b":1,"\u00e9":null,"k\\":1}'
    assert shapes["an empty object"] == "{}"
    assert shapes["spaced"] == '{"a":null,"b":1}'
    for name in ("single quotes", "NaN", "a leading zero", "after the object", "a raw control character",
                 "an invalid escape", "an array", "a trailing comma", "unterminated string", "not an object"):
        assert shapes[name] == dict(SHAPE_TEXTS + TEXTS)[name], name
    assert shapes["null"] is None


def _utf8_cases() -> list[tuple[str, bytes | None]]:
    """Byte strings on both sides of UTF-8 validity, at every offset of the eight-byte steps."""
    cases: list[tuple[str, bytes | None]] = [("null", None), ("empty", b"")]
    bad = {
        "lone continuation": b"\x80", "overlong slash": b"\xc0\xaf", "overlong NUL": b"\xe0\x80\x80",
        "UTF-16 surrogate": b"\xed\xa0\x80", "above U+10FFFF": b"\xf4\x90\x80\x80", "truncated": b"\xe2\x82",
        "invalid byte": b"\xff", "Latin-1 e-acute": b"\xe9",
    }
    good = {"e-acute": "é".encode(), "euro": "€".encode(), "emoji": "😀".encode(), "CJK": "中".encode()}
    for prefix in range(10):
        ascii_text = b'{"k": "' + b"x" * prefix
        for name, tail in bad.items():
            cases.append((f"{name} after {prefix}", ascii_text + tail + b'"}'))
        for name, tail in good.items():
            cases.append((f"{name} after {prefix}", ascii_text + tail + b'"}'))
        cases.append((f"ascii {prefix}", ascii_text + b'"}'))
        cases.append((f"DEL and NUL {prefix}", ascii_text + b'\x7f\x00"}'))
    return cases


def test_utf8_text_gives_what_is_valid_utf8_gives(texts):
    """cdc_lakehouse.json.utf8_text (ASCII checked eight bytes at a time) is the text exactly
    when Spark's is_valid_utf8 says the bytes are valid, and null otherwise."""
    spark = texts
    cases = _utf8_cases()
    spark.createDataFrame(cases, "name string, value binary").createOrReplaceTempView("byte_strings")
    jvm = _compiled_expression("cdc_utf8_text('value')", jvm=True).replace("texts", "byte_strings")
    regular = _compiled_expression("cdc_utf8_text('value')", jvm=False).replace("texts", "byte_strings")
    assert "cdc_lakehouse.json.utf8_text" in jvm and "is_valid_utf8" in regular
    got = {r["name"]: r["out"] for r in spark.sql(jvm.replace("select", "select name,", 1)).collect()}
    expected = {r["name"]: r["out"] for r in spark.sql(regular.replace("select", "select name,", 1)).collect()}
    assert got == expected
    # both sides of the check are there: invalid bytes give null, valid ones their text
    assert got["UTF-16 surrogate after 7"] is None and got["Latin-1 e-acute after 0"] is None
    assert got["emoji after 9"] == '{"k": "xxxxxxxxx😀"}' and got["null"] is None and got["empty"] == ""
