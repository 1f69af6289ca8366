"""resp_check.py PORT: redis-py (Debian's python3-redis) against the RESP
server on 127.0.0.1:PORT. Each check raises on a wrong answer. Used by
benchmark-resp.sh."""

import os
import sys

import redis


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print("Usage: resp_check.py PORT   (redis-py against 127.0.0.1:PORT)")
        return
    r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
    p = "py:%d:" % os.getpid()
    assert r.ping()
    assert r.set(p + "k", b"v\x00\r\n")
    assert r.get(p + "k") == b"v\x00\r\n"
    assert r.get(p + "missing") is None
    assert r.mset({p + "a": "1", p + "b": "2"})
    assert r.mget([p + "a", p + "missing", p + "b"]) == [b"1", None, b"2"]
    assert r.exists(p + "a", p + "b", p + "missing") == 2
    assert r.delete(p + "a", p + "missing") == 1
    assert r.setnx(p + "nx", "x") is True
    assert r.setnx(p + "nx", "y") is False
    assert r.set(p + "nx", "z", xx=True)
    assert r.set(p + "nx", "w", nx=True) is None
    assert r.getset(p + "nx", "u") == b"z"
    assert "redis_version" in r.info()
    assert r.dbsize() >= 3
    pipe = r.pipeline(transaction=False)
    for i in range(1000):
        pipe.set(p + "pipe%d" % i, str(i))
    for i in range(1000):
        pipe.get(p + "pipe%d" % i)
    res = pipe.execute()
    assert res[:1000] == [True] * 1000
    assert res[1000:] == [str(i).encode() for i in range(1000)]
    try:
        r.set(p + "k", "v", ex=10)
        raise AssertionError("SET EX was not refused")
    except redis.ResponseError as e:
        assert "not supported" in str(e)
    try:
        r.execute_command("FLUSHALL")
        raise AssertionError("FLUSHALL was not refused")
    except redis.ResponseError as e:
        assert "unknown command" in str(e)
    assert r.ping()  # the connection goes on after errors
    r.delete(p + "k", p + "b", p + "nx", *[p + "pipe%d" % i for i in range(1000)])
    print("redis-py %s: every check passed" % redis.__version__)


main()
