"""Issue #13: a threaded CPython workload for the LWK — rounds of threads that hash and compress
(hashlib and zlib release the GIL on large buffers, so the threads run at once on the LWK's
CPUs); prints the digests in a fixed order."""
import hashlib
import sys
import threading
import zlib

def work(i, r, out):
    data = (f"{r}:{i}:" * 4096).encode() * 16
    h = hashlib.sha256()
    for _ in range(8):
        h.update(data)
    out[i] = f"{h.hexdigest()[:16]} {len(zlib.compress(data, 6))}"

def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    total = hashlib.sha256()
    for r in range(rounds):
        out = [None] * threads
        ts = [threading.Thread(target=work, args=(i, r, out)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        total.update(" ".join(out).encode())
        if r < 2:
            print(r, *out)
    print("rounds", rounds, "threads", threads, "digest", total.hexdigest())

main()
