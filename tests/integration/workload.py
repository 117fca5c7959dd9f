# tests/integration/workload.py: a deterministic dict/list/string workload for
# python3, run by programs.sh with and without xalloc preloaded; stdout must
# be identical. Whether libxalloc.so.1 is mapped goes to stderr (it differs
# between the two runs by design).
import hashlib
import json
import random
import sys

with open("/proc/self/maps") as f:
    loaded = any("libxalloc.so.1" in line and " r-xp " in line for line in f)
print("xalloc-loaded=%s" % loaded, file=sys.stderr)

rng = random.Random(12345)
d = {}
for i in range(200000):
    key = "k%07d-%x" % (i, rng.getrandbits(32))
    d[key] = [i, str(i * 7), {"sq": i * i % 1000003}] if i % 3 else "v" * (i % 97)
print("dict", len(d))

keys = sorted(d, key=lambda k: (len(k), k[::-1]))
print("sorted", keys[0], keys[-1], len(keys))

joined = ",".join(keys)
print("joined", len(joined), hashlib.sha256(joined.encode()).hexdigest())

dumped = json.dumps(d, sort_keys=True)
print("json", len(dumped), hashlib.sha256(dumped.encode()).hexdigest())
back = json.loads(dumped)
print("roundtrip", back == d)

# Churn: grow and shrink lists and strings, delete half the dict.
for k in keys[::2]:
    del d[k]
lst = []
for i in range(300000):
    lst.append(("%d" % i) * (i % 13))
    if i % 5 == 0:
        lst.pop(len(lst) // 2)
text = "".join(lst)
print("after-churn", len(d), len(lst), hashlib.md5(text.encode()).hexdigest())
words = {}
for w in text.split("9"):
    words[w] = words.get(w, 0) + 1
top = sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
print("top", [(w[:12], c) for w, c in top])
