import json
import threading

import pytest

from agentotel_eval.judge.cache import ResponseCache, cache_key, resolve_cache
from agentotel_eval.runtime import judge_cache_dir

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def test_key_depends_on_model_messages_and_params_only():
    base = cache_key("m", MESSAGES, {"temperature": 0, "prompt": "v1"})
    assert base == cache_key("m", [dict(m) for m in MESSAGES], {"prompt": "v1", "temperature": 0})
    assert base != cache_key("m2", MESSAGES, {"temperature": 0, "prompt": "v1"})
    assert base != cache_key(
        "m", [*MESSAGES[:1], {"role": "user", "content": "u2"}], {"temperature": 0, "prompt": "v1"}
    )
    assert base != cache_key("m", MESSAGES, {"temperature": 0, "prompt": "v2"})


def test_round_trip_and_miss(tmp_path):
    cache = ResponseCache(tmp_path / "c")
    key = cache_key("m", MESSAGES)
    assert cache.get(key) is None
    cache.put(key, '{"detected": false}', cost_usd=0.0012, model="m")
    hit = cache.get(key)
    assert (hit.text, hit.cost_usd, hit.model) == ('{"detected": false}', 0.0012, "m")
    assert len(cache) == 1
    cache.clear()
    assert cache.get(key) is None


def test_corrupt_or_foreign_entries_are_misses(tmp_path):
    cache = ResponseCache(tmp_path)
    key = cache_key("m", MESSAGES)
    cache.put(key, "x", cost_usd=None, model="m")
    path = next(tmp_path.glob("??/*.json"))
    path.write_text('{"format": 1, "text": ')  # half-written by something that did not use put()
    assert cache.get(key) is None
    path.write_text(json.dumps({"format": 99, "text": "x"}))
    assert cache.get(key) is None


def test_concurrent_writers_and_readers_never_see_a_partial_entry(tmp_path):
    cache = ResponseCache(tmp_path)
    key = cache_key("m", MESSAGES)
    texts = [json.dumps({"writer": i, "pad": "x" * 20_000}) for i in range(8)]
    bad = []

    def write(i):
        for _ in range(20):
            cache.put(key, texts[i], cost_usd=float(i), model="m")

    def read():
        for _ in range(200):
            hit = cache.get(key)
            if hit is not None and hit.text not in texts:
                bad.append(hit.text[:50])

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)] + [
        threading.Thread(target=read) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    assert cache.get(key).text in texts
    assert not list(tmp_path.rglob(".tmp-*"))  # no temporary files left behind


def test_resolve_cache_argument_and_contextvar(tmp_path):
    assert resolve_cache(False) is None
    assert resolve_cache(None) is None  # nothing set by evaluate()
    assert resolve_cache(tmp_path).directory == tmp_path
    explicit = ResponseCache(tmp_path)
    assert resolve_cache(explicit) is explicit
    token = judge_cache_dir.set(tmp_path / "from-evaluate")
    try:
        assert resolve_cache(None).directory == tmp_path / "from-evaluate"
        assert resolve_cache(False) is None  # an explicit opt-out wins
    finally:
        judge_cache_dir.reset(token)
    with pytest.raises(ValueError):
        resolve_cache(True)
    with pytest.raises(TypeError):
        resolve_cache(42)


def test_bad_keys_are_refused(tmp_path):
    with pytest.raises(ValueError):
        ResponseCache(tmp_path).get("../../etc/passwd")
