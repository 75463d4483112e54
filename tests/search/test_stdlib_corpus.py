"""The realistic search corpus: valid events, every one a document, lifelike ids,
times and sizes, the same for a seed."""

from __future__ import annotations

import itertools
import json
import uuid
from collections import Counter

from agentlog.domain.search_text import document_text, tokens
from agentlog.domain.vocabulary import check_payload
from bench.stdlib_corpus import (
    RARE,
    SPAN,
    START,
    Corpus,
    choose_queries,
)

SESSIONS, EVENTS = 30, 60


def test_every_event_is_a_valid_core_event_and_one_document() -> None:
    kinds: Counter[str] = Counter()
    for _head, log in Corpus(SESSIONS, EVENTS):
        assert [event["seq"] for event in log] == list(range(EVENTS))
        for event in log:
            check_payload(event["type"], event["data"])
            text = document_text(event)
            assert text
            kinds[event["type"]] += 1
            size = len(tokens(text))
            data = event["data"]
            if event["type"] == "user/message":
                assert 3 <= size <= 61  # 60, and the rare word may be one more
            elif event["type"] == "assistant/message":
                assert 20 <= size <= 301
            elif event["type"] == "tool/call":
                arguments = json.loads(data["arguments"])
                assert data["name"] in ("bash", "read_file")
                assert arguments.get("command", arguments.get("path", "")).strip()
            else:
                lines = data["content"][0]["text"].count("\n")
                assert 9 <= lines <= 81
    # A turn: a user message, 1-5 tool call/result pairs, an assistant message.
    assert kinds["tool/call"] >= kinds["tool/result"] >= kinds["tool/call"] - SESSIONS
    assert kinds["tool/result"] > 2 * kinds["user/message"] > 0
    assert kinds["user/message"] >= kinds["assistant/message"] > 0


def test_ids_and_times_are_lifelike_and_the_corpus_is_the_same_for_a_seed() -> None:
    heads = []
    for head, log in Corpus(SESSIONS, EVENTS, seed=3):
        assert (
            uuid.UUID(head["id"]).version == 4
            and str(uuid.UUID(head["id"])) == head["id"]
        )
        times = [event["time"] for event in log]
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert head["createdAt"] < times[0] and 200 <= min(gaps) <= max(gaps) <= 60_000
        heads.append(head)
    starts = [head["createdAt"] for head in heads]
    assert (
        starts == sorted(set(starts)) and START <= starts[0] < starts[-1] < START + SPAN
    )
    assert heads == [head for head, _ in Corpus(SESSIONS, EVENTS, seed=3)]
    assert heads != [head for head, _ in Corpus(SESSIONS, EVENTS, seed=4)]


def test_the_rare_word_lands_in_fifty_events() -> None:
    texts = [document_text(e) or "" for _, log in Corpus(20, 100) for e in log]
    assert sum(RARE in text for text in texts) == 50


def test_queries_are_chosen_by_counting_documents() -> None:
    documents = ["c a b"] * 3 + ["a b c", "a c b d", "x is not none seven"]
    documents += [f"w{n}" for n in range(194)]  # 200 documents
    chosen = choose_queries(documents)
    assert (chosen.common, chosen.middle) == ("a", "seven")  # seven: 0.5%
    assert (chosen.natural, chosen.worst) == ("is not none", "c a b")  # 3 > 1 > 0
    assert chosen.counts == {"a": 5, "seven": 1, "is not none": 1, "c a b": 3}
    assert chosen.together == 5 and chosen.pilot_documents == 200
