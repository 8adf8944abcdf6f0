"""Re-derive every claim of `udsprobe --compare --json`'s explanation from the document's own
numbers, with code that shares nothing with user/compare/explain.c (docs/JSON.md, "explanation").

check_document(doc) returns a list of errors, one line each: a claim whose values are not the
results' numbers, whose sentence states a number or a direction the numbers do not give, or
that makes a causal statement no counter of the run supports. Used by test_explain_claims.py.
"""
import re

NOISE_FLOOR = 0.05          # docs/REPORTS.md: under 5 % one run cannot tell from noise
UDS_PIECE_MAX = 36864       # a UDS skb: 32 KiB of pages + its head
TCP_PIECE_MAX = 65536       # a TCP GSO segment
PAYS_MORE_NS = 20
WORD = {"unix": "UDS", "tcp": "TCP"}

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
DUR_RE = re.compile(r"(-?\d+(?:\.(\d+))?) (ns|us|ms|s)\b")

# Sentences that no counter of a --compare run can support (the old fixed narrative).
UNSUPPORTED = [
    "unix_write_space",
    "no handshake segments",
    "SYN/accept queue processing",
    "batches segments while the receiver sleeps",
]


def close(a, b, rel=2e-3, abs_=0.02):
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def near(a, b):
    """Too close to a threshold to judge from 6-digit JSON numbers: either side is accepted."""
    return abs(a - b) <= max(1.0, 1e-4 * max(abs(a), abs(b)))


def durations(text):
    """(ns, tolerance) of every duration the sentence prints."""
    out = []
    for m in DUR_RE.finditer(text):
        decimals = len(m[2]) if m[2] else 0
        unit = UNIT_NS[m[3]]
        out.append((float(m[1]) * unit, 0.5 * 10 ** -decimals * unit))
    return out


def says_dur(text, ns, slack=0.0):
    """Does the sentence print ns as a duration (to its printed precision)? slack: how far the
    checker's own figure may be off (a difference of large numbers rounded to 6 digits)."""
    return any(abs(abs(ns) - abs(v)) <= tol + 1e-3 * abs(ns) + 0.5 + slack
               for v, tol in durations(text))


def percents(text):
    return [float(p) for p in re.findall(r"(-?\d+(?:\.\d+)?) ?%", text)]


def says_pct(text, pct):
    return any(abs(p - pct) <= 0.51 for p in percents(text))


class Pair:
    """One (mode, size, placement[, think]) with both transports' results."""

    def __init__(self, doc, entry):
        self.mode, self.size, self.cpu = entry["mode"], entry["msg_size"], entry["cpu"]
        self.think = entry.get("think_ns")
        self.r = {}
        for r in doc["results"]:
            if (r["mode"], r["msg_size"], r["cpu"], r.get("think_ns")) == \
               (self.mode, self.size, self.cpu, self.think):
                self.r[r["transport"]] = r
        self.traced = all("stages" in self.r.get(t, {}) for t in ("unix", "tcp"))

    def name(self):
        return f"{self.mode} {self.size} B cpu={self.cpu}"

    # -- the numbers, recomputed from the results --
    def stages(self, t):
        return [s for s in self.r[t].get("stages", []) if not s["per_connection"]]

    def stage(self, t, name):
        for s in self.r[t].get("stages", []):
            if s["name"] == name:
                return s
        return None

    def ns(self, t, name):
        s = self.stage(t, name)
        return s["ns_per_msg"] if s else 0.0

    def message(self, t):
        return sum(s["ns_per_msg"] for s in self.stages(t)) - self.ns(t, "app;gap")

    def prefix_sum(self, t, *prefixes):
        return sum(s["ns_per_msg"] for s in self.stages(t) if s["name"].startswith(prefixes))

    def tcp_only(self):
        return sum(s["ns_per_msg"] for s in self.stages("tcp")
                   if "tcp_ip_out" in s["name"] or "dev_xmit" in s["name"]
                   or s["name"].startswith("rx_softirq"))

    def copies(self, t):
        return sum(s["ns_per_msg"] for s in self.stages(t) if "copy" in s["name"])

    def per_unit(self, t):
        """Untraced ns per message (pingpong: median one-way) or per connection."""
        r = self.r[t]
        if self.mode == "pingpong":
            return r["latency_ns"]["p50"]
        rate = r["msgs_per_sec"] if self.mode == "stream" else r["conns_per_sec"]
        return 1e9 / rate if rate > 0 else 0.0

    def noise(self):
        """Is the difference within noise, by the rules docs/REPORTS.md states? None when a
        rule's comparison is too close to call from the JSON's rounded numbers."""
        u, t = self.per_unit("unix"), self.per_unit("tcp")
        rep = [self.r[x].get("repeat") for x in ("unix", "tcp")]
        if all(rep) and all(x["runs"] > 1 for x in rep):
            a, b = rep[0]["untraced_ns"], rep[1]["untraced_ns"]
            if near(a["min"], b["max"]) or near(b["min"], a["max"]):
                return None
            return a["min"] <= b["max"] and b["min"] <= a["max"]
        faster = max([-self.r[x]["overhead_ns"] for x in ("unix", "tcp")
                      if "overhead_ns" in self.r[x]] + [0.0])
        diff, big = abs(u - t), max(u, t, 1)
        if faster > 0 and near(diff, faster):
            return None
        if faster > 0 and diff <= faster:
            return True
        if near(diff, NOISE_FLOOR * big):
            return None
        return diff / big < NOISE_FLOOR

    def winner(self):
        return "unix" if self.per_unit("unix") < self.per_unit("tcp") else "tcp"

    def in_pieces(self, t):
        """A stream call's chunk count holds earlier calls' data too: there only a message
        larger than one piece surely crossed in several. Pingpong and connect count the
        message's own."""
        r = self.r[t]
        if not r.get("bulk_messages"):
            return False
        if self.mode == "stream":
            return self.size > (UDS_PIECE_MAX if t == "unix" else TCP_PIECE_MAX)
        return bool(r.get("chunks_counted")) and r.get("chunks_per_msg", 0) >= 1.05

    def largest_stage(self, t):
        st = self.stages(t)
        return max(st, key=lambda s: s["ns_per_msg"])["name"] if st else None

    def connection_parts(self, t):
        conn = self.stage(t, "conn;connect")
        if not conn or not conn["count"]:
            return None
        whole = self.r[t]["traced_latency_ns"]["mean"]
        msgs = self.message(t) * self.r[t]["messages"] / conn["count"]
        return {"connect": conn["ns_per_msg"], "messages": msgs,
                "rest": whole - conn["ns_per_msg"] - msgs, "whole": whole}


def values_match(c, expect, errs, where, slack=0.0):
    """slack: absolute ns the checker's own figures may be off (see says_dur)."""
    v = c["values"]
    for k, want in expect.items():
        if k not in v:
            errs.append(f"{where}: {c['kind']} lacks value {k}")
        elif isinstance(want, str) or isinstance(want, bool):
            if v[k] != want:
                errs.append(f"{where}: {c['kind']} {k}={v[k]!r}, the numbers give {want!r}")
        elif v[k] is None or not (close(v[k], want) or abs(v[k] - want) <= slack):
            errs.append(f"{where}: {c['kind']} {k}={v[k]}, the numbers give {want:.6g}")


def text_durs(c, nums, errs, where, slack=0.0):
    for n in nums:
        if not says_dur(c["text"], n, slack):
            errs.append(f"{where}: {c['kind']} sentence does not state {n:.0f} ns: {c['text']}")


# ---- one checker per kind -------------------------------------------------------------------

def k_headline(p, c, errs, where):
    noise = p.noise()
    key = {"pingpong": ("unix_p50_ns", "tcp_p50_ns"), "stream": ("unix_msgs_per_sec",
           "tcp_msgs_per_sec"), "connect": ("unix_conns_per_sec", "tcp_conns_per_sec")}[p.mode]
    field = {"pingpong": None, "stream": "msgs_per_sec", "connect": "conns_per_sec"}[p.mode]
    got = [p.r[t]["latency_ns"]["p50"] if not field else p.r[t][field] for t in ("unix", "tcp")]
    values_match(c, dict(zip(key, got)), errs, where)
    text = c["text"]
    if noise is None:
        return
    if noise:
        if c["values"].get("faster") != "none" or "noise" not in text or "--repeat" not in text:
            errs.append(f"{where}: the difference is within noise but the sentence does not say "
                        f"so: {text}")
        if re.search(r"less time|is faster", text):
            errs.append(f"{where}: names a winner inside the noise: {text}")
        return
    w = p.winner()
    if c["values"].get("faster") != w:
        errs.append(f"{where}: faster={c['values'].get('faster')}, the numbers give {w}")
    if p.mode == "pingpong":
        u, t = got
        pct = 100 * (1 - min(u, t) / max(u, t))
        if f"{WORD[w]} takes" not in text or not says_pct(text, pct):
            errs.append(f"{where}: expected '{WORD[w]} takes {pct:.0f}% less time': {text}")
        text_durs(c, got, errs, where)
    else:
        ratio = got[0] / max(got[1], 1)
        if f"{ratio:.2f}x" not in text and f"{ratio + 0.005:.2f}x" not in text and \
           f"{ratio - 0.005:.2f}x" not in text:
            errs.append(f"{where}: ratio {ratio:.2f}x not in: {text}")
        if f"{WORD[w]} is faster" not in text:
            errs.append(f"{where}: expected '{WORD[w]} is faster': {text}")


def k_noise(p, c, errs, where):
    t = c["values"].get("transport")
    r = p.r.get(t, {})
    if "overhead_ns" not in r or r["overhead_ns"] >= 0:
        errs.append(f"{where}: noise caveat for {t}, whose traced run was not faster")
        return
    values_match(c, {"traced_faster_ns": -r["overhead_ns"]}, errs, where)
    text_durs(c, [-r["overhead_ns"]], errs, where)
    if "--repeat" not in c["text"]:
        errs.append(f"{where}: noise caveat without --repeat: {c['text']}")


def k_message_cost(p, c, errs, where):
    u, t = p.message("unix"), p.message("tcp")
    values_match(c, {"unix_ns": u, "tcp_ns": t}, errs, where)
    text_durs(c, [u, t, t - u], errs, where)


def k_tcp_only(p, c, errs, where):
    only, u, t = p.tcp_only(), p.message("unix"), p.message("tcp")
    diff, text = t - u, c["text"]
    values_match(c, {"tcp_only_ns": only, "diff_ns": diff}, errs, where)
    text_durs(c, [only], errs, where)
    inl = p.stage("tcp", "rx_softirq;backlog")
    if "inside the sender's send()" in text:
        if not inl:
            errs.append(f"{where}: softirq inline claimed without rx_softirq;backlog")
        elif f"for {inl['count']} of {p.r['tcp']['messages']} messages" not in text:
            errs.append(f"{where}: softirq inline count not {inl['count']}: {text}")
    if near(abs(diff), NOISE_FLOOR * max(u, t)):
        return
    if abs(diff) < NOISE_FLOOR * max(u, t):
        if "no share" not in text:
            errs.append(f"{where}: a share of a difference under 5 %: {text}")
        return
    if diff <= 0:
        if "shorter" not in text or "That is" in text:
            errs.append(f"{where}: TCP's message is shorter, the sentence says otherwise: {text}")
        return
    share = 100 * only / diff
    values_match(c, {"share_pct": share}, errs, where)
    if not says_pct(text, share):
        errs.append(f"{where}: share {share:.0f}% not in: {text}")
    if near(only, diff):
        return
    if share > 100 and not re.search(r"\bback\b", text):
        errs.append(f"{where}: share {share:.0f}% over 100 % without what pays it back: {text}")
    if share <= 100 and re.search(r"\bback\b", text):
        errs.append(f"{where}: something pays back a share under 100 %: {text}")


def k_uds_pays_more(p, c, errs, where):
    want = {}
    for s in p.stages("unix"):
        tn = p.ns("tcp", s["name"])
        if tn > 0 and s["ns_per_msg"] - tn >= PAYS_MORE_NS:
            want[s["name"]] = s["ns_per_msg"] - tn
    if set(c["values"]) != set(want):
        errs.append(f"{where}: uds_pays_more lists {sorted(c['values'])}, the numbers give "
                    f"{sorted(want)}")
    values_match(c, want, errs, where)


def leaves(name):
    phase, _, rest = name.partition(";")
    return phase, set(rest.split("+")) if rest else set()


def merged_elsewhere(p, t, name):
    """Does the other transport hold part of this stage under another name (a boundary one
    transport's mode merged: tracepoint's send;syscall+sock against send;syscall)?"""
    other = "tcp" if t == "unix" else "unix"
    if p.stage(other, name):
        return False
    ph, lv = leaves(name)
    return any(leaves(s["name"])[0] == ph and leaves(s["name"])[1] & lv for s in p.stages(other))


def k_largest_difference(p, c, errs, where):
    names = {s["name"] for t in ("unix", "tcp") for s in p.stages(t)
             if not merged_elsewhere(p, t, s["name"])} - {"app;gap"}
    diffs = {n: p.ns("tcp", n) - p.ns("unix", n) for n in names}
    best = max(diffs, key=lambda n: abs(diffs[n]))
    got = c["values"].get("stage")
    if got not in diffs or abs(diffs[got]) < abs(diffs[best]) - 1.0:
        errs.append(f"{where}: largest difference is {best} ({diffs[best]:+.0f} ns), the "
                    f"claim names {got}")
        return
    text = c["text"]
    both = p.stage("unix", got) and p.stage("tcp", got)
    if both:
        word = "longer" if diffs[got] > 0 else "shorter"
        if word not in text:
            errs.append(f"{where}: {got} is {word} on TCP: {text}")
    elif f"only {'TCP' if diffs[got] > 0 else 'UDS'} has" not in text:
        errs.append(f"{where}: {got} is one transport's only: {text}")
    text_durs(c, [diffs[got]], errs, where)


def k_wait_cpu(p, c, errs, where):
    if p.largest_stage("unix") != "sched;wait_cpu" or p.largest_stage("tcp") != "sched;wait_cpu":
        errs.append(f"{where}: waiting for a CPU is not both transports' largest stage")
    text = c["text"]
    same = [p.r[t]["client_cpu"] == p.r[t]["server_cpu"] for t in ("unix", "tcp")]
    if "one CPU" in text and not all(same):
        errs.append(f"{where}: says one CPU, the runs used {[p.r[t]['client_cpu'] for t in p.r]}"
                    f"/{[p.r[t]['server_cpu'] for t in p.r]}")
    if "different CPUs" in text and any(same):
        errs.append(f"{where}: says different CPUs, a run used one")
    if "costs TCP more than its stages" in text and \
       not p.prefix_sum("tcp", "sched;") > p.tcp_only() > 0:
        errs.append(f"{where}: TCP's wait is not more than its TCP-only stages")
    text_durs(c, [p.prefix_sum("unix", "sched;"), p.prefix_sum("tcp", "sched;")], errs, where)


def k_pieces(p, c, errs, where):
    text = c["text"]
    for t in ("unix", "tcp"):
        named = f"on {WORD[t]}" in text
        if named and not p.in_pieces(t):
            errs.append(f"{where}: says a message crosses in several pieces on {WORD[t]}; "
                        f"its numbers do not (chunks {p.r[t].get('chunks_per_msg')}, size "
                        f"{p.size}): {text}")
        if p.in_pieces(t) and not named:
            errs.append(f"{where}: {WORD[t]}'s message crossed in pieces, not said")
        if named and p.in_pieces(t) and c["kind"] == "pieces" and p.r[t].get("chunks_counted"):
            values_match(c, {f"{t}_chunks_per_msg": p.r[t]["chunks_per_msg"]}, errs, where)


def k_sliced(p, c, errs, where):
    t = c["values"].get("transport")
    r = p.r.get(t, {})
    values_match(c, {"bulk_messages": r.get("bulk_messages", 0), "messages": r.get("messages", 0)},
                 errs, where)
    if not r.get("bulk_messages"):
        errs.append(f"{where}: sliced claim for {t} without sliced calls")


def k_sleeps(p, c, errs, where):
    t = c["values"].get("transport")
    s = p.r.get(t, {}).get("sender_sleeps_per_msg", 0)
    if s < 0.05:
        errs.append(f"{where}: says {t}'s sender slept; sender_sleeps_per_msg is {s}")
    values_match(c, {"sleeps_per_msg": s}, errs, where)


def k_copies(p, c, errs, where):
    want = {"unix_copy_ns": p.copies("unix"), "unix_ns": p.message("unix"),
            "tcp_copy_ns": p.copies("tcp"), "tcp_ns": p.message("tcp")}
    values_match(c, want, errs, where)
    text_durs(c, list(want.values()), errs, where)


def send_side(p, t):
    pre = ("send;", "deliver;", "bulk;") + (("rx_softirq;",) if t == "tcp" else ())
    return p.prefix_sum(t, *pre)


def k_stream_send_side(p, c, errs, where):
    want = {"tcp_only_ns": p.tcp_only(), "unix_send_ns": send_side(p, "unix"),
            "tcp_send_ns": send_side(p, "tcp")}
    values_match(c, want, errs, where)
    text_durs(c, list(want.values()), errs, where)


def k_stream_xmit(p, c, errs, where):
    r = p.r["tcp"]
    values_match(c, {"xmit_calls": r["xmit_calls"], "messages": r["messages"]}, errs, where)
    if ("waited in its write queue" in c["text"]) != (r["xmit_calls"] < r["messages"]):
        errs.append(f"{where}: write-queue wait said wrongly: {c['text']}")


def wakeup_share(p, t):
    s = p.stage(t, "deliver;enqueue_wakeup")
    return s["count"] / p.r[t]["messages"] if s and p.r[t]["messages"] else 0.0


def k_stream_wakeups(p, c, errs, where):
    want = {}
    for t in ("unix", "tcp"):
        s = p.stage(t, "deliver;enqueue_wakeup")
        want[f"{t}_calls"] = s["count"] if s else -1
        want[f"{t}_messages"] = p.r[t]["messages"]
    values_match(c, want, errs, where)
    for t in ("unix", "tcp"):
        if not says_pct(c["text"], 100 * wakeup_share(p, t)):
            errs.append(f"{where}: {t} wakeup share {100 * wakeup_share(p, t):.0f}% not in text")


def k_stream_cause(p, c, errs, where):
    noise = p.noise()
    w = c["values"].get("faster")
    if noise or (noise is False and w != p.winner()):
        errs.append(f"{where}: a cause for {w}'s lead, the numbers give "
                    f"{'noise' if noise else p.winner()}")
    if w == "tcp" and not wakeup_share(p, "tcp") <= wakeup_share(p, "unix") / 2 + 1e-6:
        errs.append(f"{where}: fewer TCP wakeups claimed: {wakeup_share(p, 'tcp'):.2f} vs "
                    f"{wakeup_share(p, 'unix'):.2f}")
    if w == "unix" and not send_side(p, "unix") < send_side(p, "tcp") and \
       not near(send_side(p, "unix"), send_side(p, "tcp")):
        errs.append(f"{where}: UDS's send side is not cheaper")


def rounding_slack(p):
    """The rest of a connection is the traced mean minus connect() and the messages, each
    read from 6-digit JSON numbers: allow their rounding (5e-6 of every term)."""
    terms = 0.0
    for t in ("unix", "tcp"):
        conn = p.stage(t, "conn;connect")
        mpc = p.r[t]["messages"] / conn["count"] if conn and conn["count"] else 0
        terms += p.r[t]["traced_latency_ns"]["mean"] + (conn["ns_per_msg"] if conn else 0)
        terms += mpc * sum(abs(s["ns_per_msg"]) for s in p.stages(t))
    return 5e-6 * terms + 1.0


def k_connection(p, c, errs, where):
    want = {}
    for t in ("unix", "tcp"):
        parts = p.connection_parts(t)
        if not parts:
            errs.append(f"{where}: connection claim without conn;connect on {t}")
            return
        for k in ("connect", "messages", "rest"):
            want[f"{t}_{k}_ns"] = parts[k]
        want[f"{t}_connection_ns"] = parts["whole"]
        if not says_pct(c["text"], 100 * (parts["connect"] + parts["messages"]) / parts["whole"]):
            errs.append(f"{where}: {t} coverage not in: {c['text']}")
    values_match(c, want, errs, where, rounding_slack(p))
    text_durs(c, list(want.values()), errs, where, rounding_slack(p))


def k_accept(p, c, errs, where):
    want = {f"{t}_accept_ns": p.ns(t, "conn;accept") for t in ("unix", "tcp")}
    values_match(c, want, errs, where)
    text_durs(c, list(want.values()), errs, where)


def k_connection_difference(p, c, errs, where):
    u, t = p.connection_parts("unix"), p.connection_parts("tcp")
    diff, slack = t["whole"] - u["whole"], rounding_slack(p)
    values_match(c, {"diff_ns": diff}, errs, where, slack)
    if near(abs(diff), NOISE_FLOOR * max(u["whole"], t["whole"])):
        return
    if abs(diff) < NOISE_FLOOR * max(u["whole"], t["whole"]):
        if "no part" not in c["text"]:
            errs.append(f"{where}: names a part of a difference under 5 %: {c['text']}")
        return
    d = {k: t[k] - u[k] for k in ("connect", "messages", "rest")}
    values_match(c, {f"{k}_ns": v for k, v in d.items()}, errs, where, slack)
    top = max(d, key=lambda k: d[k] if diff > 0 else -d[k])
    got = c["values"].get("largest")
    if got != top and not (got in d and abs(d[got] - d[top]) <= 2 * slack):
        errs.append(f"{where}: largest part is {top}, the claim says {c['values'].get('largest')}")
    if abs(d[top]) > abs(diff) and not near(d[top], diff) and not re.search(r"\bback\b", c["text"]):
        errs.append(f"{where}: {top} is more than the whole difference; nothing pays it back")
    text_durs(c, [abs(diff)] + [abs(v) for v in d.values()], errs, where, slack)


def k_think(p, c, errs, where):
    rt = {t: 2.0 * p.r[t]["latency_ns"]["p50"] for t in ("unix", "tcp")}
    values_match(c, {"think_ns": p.think or 0, "unix_round_trip_ns": rt["unix"],
                     "tcp_round_trip_ns": rt["tcp"]}, errs, where)


def k_cpu(p, c, errs, where):
    if p.mode == "pingpong":
        errs.append(f"{where}: a cpu claim in pingpong")
    want = {}
    for t in ("unix", "tcp"):
        cpu = p.r[t].get("cpu_ns")
        if not cpu:
            errs.append(f"{where}: cpu claim without {t}'s cpu_ns")
            return
        want.update({f"{t}_user_ns": cpu["user"], f"{t}_system_ns": cpu["system"],
                     f"{t}_softirq_ns": cpu["softirq"]})
    values_match(c, want, errs, where)
    text_durs(c, list(want.values()) + [want[f"{t}_user_ns"] + want[f"{t}_system_ns"]
                                        for t in ("unix", "tcp")], errs, where)


KINDS = {
    "cpu": k_cpu,
    "latency": k_headline, "throughput": k_headline, "connections": k_headline,
    "noise": k_noise, "think": k_think, "message_cost": k_message_cost, "tcp_only": k_tcp_only,
    "uds_pays_more": k_uds_pays_more, "largest_difference": k_largest_difference,
    "wait_cpu": k_wait_cpu, "pieces": k_pieces, "sliced": k_sliced, "sleeps": k_sleeps,
    "copies": k_copies, "stream_send_side": k_stream_send_side, "stream_xmit": k_stream_xmit,
    "stream_wakeups": k_stream_wakeups, "stream_cause": k_stream_cause,
    "connection": k_connection, "accept": k_accept,
    "connection_difference": k_connection_difference,
}
HEADLINE = {"pingpong": "latency", "stream": "throughput", "connect": "connections"}


def check_text_rules(p, c, errs, where):
    """Rules on the sentence whatever its kind: a claim cannot hide under another kind."""
    text = c["text"]
    for bad in UNSUPPORTED:
        if bad in text:
            errs.append(f"{where}: '{bad}' rests on no counter of the run: {text}")
    if "several pieces" in text and c["kind"] != "pieces":
        k_pieces(p, c, errs, where)
    if re.search(r"\bwins\b", text) and c["kind"] not in HEADLINE.values():
        if p.noise():
            errs.append(f"{where}: names a winner inside the noise: {text}")
    for share in re.findall(r"(\d+)% of the difference", text):
        if int(share) > 100 and not re.search(r"\bback\b", text):
            errs.append(f"{where}: {share}% of the difference, nothing pays the rest back: {text}")


HEADER_RE = re.compile(r"^(pingpong|stream|connect) (\d+) B, .*cpu=(same|split|none)")
SECTION_RE = re.compile(r"^(pingpong|stream|connect) \d+ B cpu=")


def check_text_report(doc, text):
    """The sentences under each pair of the text report, whatever the JSON holds, against the
    rules any sentence must keep (unsupported narrative, pieces, winners in the noise)."""
    errs, pair = [], None
    for line in text.splitlines():
        m = HEADER_RE.match(line)
        if m:
            pair = Pair(doc, {"mode": m[1], "msg_size": int(m[2]), "cpu": m[3]})
            continue
        if SECTION_RE.match(line):
            pair = None
        if pair is None or not line or line.startswith(" "):
            continue
        check_text_rules(pair, {"kind": "text", "text": line, "values": {}}, errs, pair.name())
    return errs


def check_pair(doc, entry):
    p = Pair(doc, entry)
    errs, where = [], p.name()
    claims = entry.get("explanation")
    if not claims:
        return [f"{where}: no explanation"]
    if claims[0]["kind"] != HEADLINE[p.mode]:
        errs.append(f"{where}: first claim is {claims[0]['kind']}, not {HEADLINE[p.mode]}")
    noise = p.noise()
    want_caveats = 0 if noise or any(p.r[t].get("repeat", {}).get("runs", 1) > 1 for t in p.r) \
        else sum(1 for t in p.r if p.r[t].get("overhead_ns", 0) < 0)
    got_caveats = sum(1 for c in claims if c["kind"] == "noise")
    if noise is not None and got_caveats != want_caveats:
        errs.append(f"{where}: {got_caveats} noise caveats, the numbers give {want_caveats}")
    for t in ("unix", "tcp"):
        if p.traced and p.in_pieces(t) and not any(c["kind"] == "pieces" for c in claims):
            errs.append(f"{where}: {WORD[t]}'s message crossed in pieces, no claim says so")
    for c in claims:
        check = KINDS.get(c["kind"])
        if not check:
            errs.append(f"{where}: unknown claim kind {c['kind']!r}: {c['text']}")
            continue
        if not p.traced and c["kind"] not in HEADLINE.values() and \
           c["kind"] not in ("think", "cpu"):
            errs.append(f"{where}: {c['kind']} claim in an untraced pair")
            continue
        check(p, c, errs, where)
        check_text_rules(p, c, errs, where)
    return errs


def check_think_curve(doc, c):
    """The curve's ends: the least and the most --think of the pingpong runs at one size and
    placement, their round trips twice the one-way medians."""
    errs = []
    if c["kind"] != "think_curve":
        return [f"think_explanation: unknown kind {c['kind']!r}"]
    v = c["values"]
    for end in ("least", "most"):
        rs = {r["transport"]: r for r in doc["results"] if r["mode"] == "pingpong"
              and r.get("think_ns") == v[f"{end}_think_ns"]}
        if set(rs) != {"unix", "tcp"}:
            errs.append(f"think_curve: no pair with think {v[f'{end}_think_ns']}")
            continue
        values_match(c, {f"{end}_{t}_ns": 2.0 * rs[t]["latency_ns"]["p50"] for t in rs}, errs,
                     "think_curve")
        u, t = v[f"{end}_unix_ns"], v[f"{end}_tcp_ns"]
        if not says_pct(c["text"], abs(round(100 * (1 - u / t)))):
            errs.append(f"think_curve: {end} share {100 * (1 - u / t):.0f}% not in: {c['text']}")
    thinks = sorted({r["think_ns"] for r in doc["results"] if "think_ns" in r})
    if [v["least_think_ns"], v["most_think_ns"]] != [thinks[0], thinks[-1]]:
        errs.append(f"think_curve: ends {v['least_think_ns']}, {v['most_think_ns']}, the runs "
                    f"span {thinks[0]}..{thinks[-1]}")
    return errs


def check_document(doc):
    if "pairs" not in doc:
        return ["the document has no pairs[].explanation (docs/JSON.md)"]
    errs = []
    for entry in doc["pairs"]:
        errs += check_pair(doc, entry)
    for c in doc.get("think_explanation", []):
        errs += check_think_curve(doc, c)
    return errs


# ---- --compare of programs (docs/PROGRAMS.md, "explanation") --------------------------------

def check_programs(doc, text):
    """The claims of a --compare of programs against its results, and each printed in text."""
    by = {r["transport"]: r for r in doc["results"]}
    claims, errs = doc.get("explanation"), []
    if not claims:
        return ["no explanation"]
    lines = set(text.splitlines())
    for c in claims:
        if c["text"] not in lines:
            errs.append(f"not in the text report: {c['text']}")
        v = c["values"]
        if c["kind"] == "run_time":
            u, t = by["unix"]["wall_ns"], by["tcp"]["wall_ns"]
            values_match(c, {"unix_wall_ns": u, "tcp_wall_ns": t}, errs, "programs")
            if near(t, (1 + NOISE_FLOOR) * u) or near(u, (1 + NOISE_FLOOR) * t):
                continue
            if t >= (1 + NOISE_FLOOR) * u:
                ok = "TCP run took" in c["text"] and f"{t / u:.2f}x" in c["text"]
            elif u >= (1 + NOISE_FLOOR) * t:
                ok = "unix run took" in c["text"] and f"{u / t:.2f}x" in c["text"]
            else:
                ok = "noise" in c["text"] and "as long as" not in c["text"]
            if not ok:
                errs.append(f"run times {u} vs {t} ns, the claim says: {c['text']}")
        elif c["kind"] in ("in_flight", "overlap"):
            values_match(c, {"unix_in_flight_ns": by["unix"]["in_flight_ns"],
                             "tcp_in_flight_ns": by["tcp"]["in_flight_ns"]}, errs, "programs")
            if "Most of each run is the programs' own time" in c["text"] and not all(
                    r["wall_ns"] - r["in_flight_ns"] > r["in_flight_ns"] for r in by.values()):
                errs.append(f"most of a run is not outside the messages: {c['text']}")
        elif c["kind"] == "messages":
            values_match(c, {"unix_messages": by["unix"]["messages"],
                             "tcp_messages": by["tcp"]["messages"]}, errs, "programs")
        elif c["kind"] == "cpu":
            want = {}
            for t, r in by.items():
                cpu = r.get("cpu_ns") or {}
                want[f"{t}_cpu_ns_per_msg"] = sum(cpu.values()) / max(r["messages"], 1)
            values_match(c, want, errs, "programs")
            text_durs(c, list(want.values()), errs, "programs")
        elif c["kind"] == "busiest_flow":
            if v.get("unix_mean_ns", 0) <= 0 or v.get("tcp_mean_ns", 0) <= 0:
                errs.append(f"busiest flow without latencies: {v}")
            word = "TCP" if v["tcp_mean_ns"] >= v["unix_mean_ns"] else "UDS"
            if f"{word} takes" not in c["text"]:
                errs.append(f"busiest flow: {word} is slower per message: {c['text']}")
        elif c["kind"] == "tcp_only":
            # the TCP flow it is about: the busiest flow's mean latency
            fl = [f for f in by["tcp"]["flows"]
                  if abs(f["latency_ns"]["mean"] - v["tcp_mean_ns"]) <= 1]
            only = [sum(k["ns_per_msg"] for k in f["kernel_stages"] if k["of"] == "send;call"
                        and ("tcp_ip_out" in k["name"] or "dev_xmit" in k["name"]
                             or k["name"].startswith("rx_softirq"))) for f in fl]
            if not any(abs(o - v["tcp_only_ns"]) <= max(1, 1e-4 * o) for o in only):
                errs.append(f"tcp_only {v['tcp_only_ns']} ns, its flow's stages give {only}")
            d, o = v["diff_ns"], v["tcp_only_ns"]
            if near(abs(d), NOISE_FLOOR * max(v["tcp_mean_ns"], v["tcp_mean_ns"] - d)):
                continue
            if abs(d) < NOISE_FLOOR * max(v["tcp_mean_ns"], v["tcp_mean_ns"] - d):
                ok = "no share" in c["text"]
            elif d < 0:
                ok = "UDS loses more" in c["text"]
            elif o <= d:
                ok = says_pct(c["text"], round(100 * o / d))
            else:
                ok = "more than the whole" in c["text"]
            if not ok:
                errs.append(f"tcp_only {o} of a difference {d}: {c['text']}")
        else:
            errs.append(f"unknown claim kind {c['kind']!r}")
    return errs
