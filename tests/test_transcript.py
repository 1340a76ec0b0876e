from memmatrix.common.canon import canonical
from memmatrix.exchange.transcript import Normalizer, Transcript


def test_ids_are_renumbered_in_order_of_first_appearance():
    n = Normalizer()
    out = n({"ids": ["4e8b6359-1111-2222-3333-444455556666", "m7"],
             "items": [{"id": "m7", "text": "deleted 4E8B6359-1111-2222-3333-444455556666 today"}]})
    assert out == {"ids": ["~1", "~2"], "items": [{"id": "~2", "text": "deleted ~1 today"}]}


def test_volatile_fields_and_secrets_are_replaced():
    n = Normalizer(volatile_fields=frozenset({"created_at"}))
    out = n({"created_at": "2026-11-29T10:00:00", "api_key": "sk-live-123", "config": {"password": "x"}, "at": "t"})
    assert out == {"created_at": "~volatile", "api_key": "~redacted", "config": {"password": "~redacted"}, "at": "t"}


def test_wall_clock_times_are_masked_whole_in_every_common_shape():
    from datetime import datetime, timezone
    today = datetime.now(timezone.utc).date().isoformat()
    n = Normalizer()
    for shape in ("{d}T09:21:44.123Z", "{d} 09:21:44 PM UTC+0000", "{d} 09:21 am GMT", "{d}T21:21:44+02:00"):
        assert n({"text": f"recompiled: {shape.format(d=today)}; 3 messages"}) == {"text": "recompiled: ~wallclock; 3 messages"}
    assert n({"text": "2001-03-02 09:00:00 PM UTC"}) == {"text": "2001-03-02 09:00:00 PM UTC"}  # the case's own clock stays


def test_transcript_text_is_canonical_and_hash_stable():
    a, b = Transcript(), Transcript()
    a.add({"b": 1, "a": "é"})
    b.add({"a": "é", "b": 1})
    assert a.text() == '{"a":"é","b":1}\n'
    assert a.sha256() == b.sha256()


def test_text_is_the_lines_made_on_add_and_made_afresh_for_records_replaced():
    t = Transcript()
    t.add({"z": [1.5, {"y": None}], "a": "Ysaëlle"})
    t.prepend({"kind": "run"})
    t.add_exchange({"case": "c"}, "door", {"query": "q"}, result={"text": "x", "items": []})
    assert t.text() == "".join(canonical(r) + "\n" for r in t.records)
    assert t.text().splitlines()[0] == '{"kind":"run"}'
    t.records = [t.records[1], t.records[0]]  # a --jobs run's merge puts a new list in place
    assert t.text() == "".join(canonical(r) + "\n" for r in t.records)
    assert t.text().startswith('{"a":"Ysaëlle"')


def test_arguments_are_recorded_as_sent_and_only_answers_are_normalised():
    t = Transcript()
    t.normalize.volatile_fields = frozenset({"at"})
    rec = t.add_exchange({"case": "c"}, "audit", {"scope": "s", "at": "2026-03-02T09:00:00Z", "api_key": "sk-1"},
                         result={"events": [{"at": "2026-11-29T15:00:00", "memory_id": "m1"}]})
    assert rec["args"] == {"scope": "s", "at": "2026-03-02T09:00:00Z", "api_key": "~redacted"}
    assert rec["result"] == {"events": [{"at": "~volatile", "memory_id": "~1"}]}


def test_durations_ago_are_masked_but_never_at_a_needles_cost():
    n = Normalizer()
    ret = '{"time_ago": "3s ago", "content": "my locker code is QX-4471"} and one 12 minutes ago, 2h ago'
    assert n({"text": ret}) == {"text": '{"time_ago": "~ago", "content": "my locker code is QX-4471"} and one ~ago, ~ago'}
    assert n({"text": "I moved 3 years ago"}) == {"text": "I moved 3 years ago"}  # a case's own story, not the clock
    n.set_needles(["QX-4471", "5 minutes ago"])
    assert n({"text": "QX-4471 set 5 minutes ago, 9s ago"}) == {"text": "QX-4471 set 5 minutes ago, 9s ago"}
    assert n({"text": "QX-4471, seen 9s ago"}) == {"text": "QX-4471, seen ~ago"}


def test_values_json_does_not_make_follow_the_same_rules():
    """Answers come off the wire as plain JSON; anything else (a str subclass, a mapping subclass, a number
    type JSON has not) is normalised by the same rules, not passed through."""
    from collections import OrderedDict
    from decimal import Decimal

    class Label(str):
        pass

    n = Normalizer(volatile_fields=frozenset({"score", "text"}))
    out = n(OrderedDict(id=Label("m7"), score=Decimal("0.5"), api_key=Label("x"), text=3,
                        items=[{"id": "m7"}], memory_id=Label("m8")))
    assert out == {"id": "~1", "score": "~volatile", "api_key": "~redacted", "text": 3,
                   "items": [{"id": "~1"}], "memory_id": "~2"}
    n.set_needles(["m7 kept"])
    assert n({"id": Label("m7 kept"), "score": Label("m7 kept")}) == {"id": "m7 kept", "score": "m7 kept"}
