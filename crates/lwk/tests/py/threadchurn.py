# Issue #14: CPython starting and joining threads over and over (test_socket and test_threading
# start a thread per test case), and a thread pool. Output must equal native.
import concurrent.futures
import threading

total = 0


def add(i):
    global total
    total += i


for i in range(1000):
    t = threading.Thread(target=add, args=(i,))
    t.start()
    t.join()
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    print("pool", sum(ex.map(lambda x: x * x, range(2000))))
ids = set()
for i in range(300):
    t = threading.Thread(target=lambda: ids.add(threading.get_native_id()))
    t.start()
    t.join()
print("sequential", total, "distinct native ids", len(ids))
