"""The word diff of two answers (evalsite.core.textdiff): pieces that give back both texts,
changes at word level, and a bound on how much is compared."""

from __future__ import annotations

from evalsite.core.textdiff import RUN_WORDS, Piece, word_diff


def _side(pieces, drop: str) -> str:
    return "".join(piece.text for piece in pieces if piece.kind != drop)


def test_the_pieces_give_back_both_texts_and_mark_the_changed_words():
    old, new = "The cat sat on the mat.", "The dog sat on a mat.\nDone."
    diff = word_diff(old, new)
    assert _side(diff.pieces, "ins").split() == old.split()
    assert _side(diff.pieces, "del") == new
    assert Piece("del", "cat ") in diff.pieces and Piece("ins", "dog ") in diff.pieces
    assert diff.changed and not diff.clipped


def test_the_same_words_with_other_spacing_are_no_change():
    diff = word_diff("one two  three", "one two three")
    assert not diff.changed
    assert [piece.kind for piece in diff.pieces] == ["same"]


def test_a_huge_answer_is_compared_up_to_the_bound_and_says_so():
    old = " ".join(f"w{i}" for i in range(50))
    new = old.replace("w40", "changed")
    diff = word_diff(old, new, max_words=30)
    assert diff.clipped
    assert not diff.changed  # the change lies beyond the compared words
    assert word_diff(old, new).changed


def test_empty_texts():
    assert word_diff("", "").pieces == ()
    assert word_diff("", "new words").pieces == (Piece("ins", "new words"),)


def test_lines_are_matched_first_and_only_the_changed_lines_word_by_word():
    old = "Steps:\n1. open the panel\n2. press reset\n3. wait\n"
    new = "Steps:\n1. open the panel\n2. press restart\n3. wait\n"
    diff = word_diff(old, new)
    assert diff.pieces == (
        Piece("same", "Steps:\n1. open the panel\n2. press "),
        Piece("del", "reset\n"),
        Piece("ins", "restart\n"),
        Piece("same", "3. wait\n"),
    )


def test_a_changed_run_too_long_to_compare_word_by_word_is_shown_whole():
    old = " ".join(f"w{i}" for i in range(RUN_WORDS + 1))
    new = old.replace("w7 ", "seven ")
    diff = word_diff(old, new)
    assert diff.pieces == (Piece("del", old), Piece("ins", new))
