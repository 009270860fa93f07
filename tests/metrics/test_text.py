"""Unicode normalisation, CJK-aware tokenisation, word edges, numbers and keyword extraction."""

from evalcore.metrics.text import (
    contains,
    extract_keywords,
    normalize,
    parse_numbers,
    squad_normalize,
    squad_tokens,
    tokenize,
)


def test_normalize_nfkc_casefold_and_quotes():
    assert normalize("ＡＢＣ  Straße\tI don’t") == "abc strasse i don't"
    assert normalize(None) == ""


def test_tokenize_korean_words_and_cjk_characters():
    assert tokenize("할덴 천문대는 1987년에 공개") == ["할덴", "천문대는", "1987년에", "공개"]
    assert tokenize("東京タワー, ok!") == ["東", "京", "タ", "ワ", "ー", "ok"]


def test_contains_respects_latin_and_number_edges_but_not_hangul():
    assert contains("천문대는 1987년에 공개되었습니다", "1987")  # no \b needed after a number in Korean
    assert contains("천문대는 1987년에", "천문대")
    assert not contains("It opened in 1987.", "98")
    assert not contains("It opened in 1987.", "19")
    assert not contains("a 4.5 m mirror", "4")
    assert contains("It has 4. Then", "4")
    assert not contains("start", "art")
    assert contains("three telescopes", "telescope")  # inflection allowed for words


def test_parse_numbers_currency_percent_separators_signs():
    text = "Premium $1,234.50, change -0.133% and +2, Rule C-1, 1987년, 약1000명, −5"
    assert parse_numbers(text) == [1234.5, -0.133, 2.0, 1.0, 1987.0, 1000.0, -5.0]
    assert parse_numbers("10-20") == [10.0, 20.0]
    assert parse_numbers("no digits here") == []


def test_extract_keywords_seed_example():
    kws = extract_keywords("Territory 118 has a rate change of 0.305% and costs $604.")
    assert kws[:3] == ["Territory 118", "0.305%", "$604"]
    assert {"rate", "change", "costs"} <= set(kws)
    assert "has" not in kws and "118" not in kws  # short word; number already inside the phrase


def test_extract_keywords_korean_strips_particles():
    kws = extract_keywords("할덴 천문대는 1987년에 일반에 공개되었습니다.")
    assert "천문대" in kws and "1987" in kws and "일반" in kws
    assert "년에" not in kws and "년" not in kws


def test_squad_normalization_official_order():
    assert squad_normalize("The Normans,  an  A-ha!") == "normans aha"
    assert squad_normalize("theatre") == "theatre"  # articles only as whole words
    assert squad_tokens("北京 the capital") == ["北", "京", "capital"]


def test_hangul_compared_as_jamo():
    assert contains("원금이 보장되는 상품이 아닙니다", "아니")  # 아니 + ㅂ니다 merge into 아닙니다
    assert contains("잘 모릅니다", "모르")
    assert not contains("가나다", "각")
