"""udsprobe --backlog and containers (issue 14 item 1), with real namespaces and no container
runtime: a network namespace of its own (`unshare --net`, loopback up, net.core.somaxconn 32
inside, the host's untouched) and a cgroup of its own in the cgroup v2 hierarchy; php-fpm runs inside
both, on a unix socket in a shared dir and on a TCP port of the namespace's loopback; the same
port on the host's loopback is another listener (listen(fd, 8)). A connect storm from inside
the namespace overflows php-fpm's queues.

Asserted: the overflows land on php-fpm's listeners with the namespace's netns inode, the
namespace's limit (32, not the host's somaxconn), php-fpm's cgroup path and the recommendation
that names the namespace; the host's port is a separate listener; --netns and --cgroup keep
exactly the listeners inside them. Every process, the namespace and the cgroup go at teardown.
"""
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import cgroup2_root
from test_backlog import (PHP_FPM, Watch, attach_args, bl_bins, free_port,  # noqa: F401
                          run_line, summary_of, world_dir)

NS_SOMAXCONN = 32
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="--backlog needs root"),
    pytest.mark.skipif(not os.path.exists(PHP_FPM), reason="php-fpm8.2 is needed "
                       "(scripts/install-deps.sh)"),
    pytest.mark.skipif(not shutil.which("unshare") or not shutil.which("nsenter"),
                       reason="unshare and nsenter (util-linux) are needed"),
]

FPM_CONF = """[global]
pid = {d}/php-fpm.pid
error_log = {d}/php-fpm.log
daemonize = no

[unixpool]
user = nobody
group = nogroup
listen = {sock}
listen.backlog = 1000
listen.mode = 0666
pm = static
pm.max_children = 1

[tcppool]
user = nobody
group = nogroup
listen = 127.0.0.1:{port}
listen.backlog = 1000
pm = static
pm.max_children = 1
"""


@pytest.fixture
def ns_fpm(procs, world_dir, test_cgroup, bl_bins):
    """php-fpm in a network namespace and a cgroup of its own, plus a host listener on the
    same port; returns what the tests assert against."""
    cg_dir, cg_path = test_cgroup
    # the namespace lives as long as this holder (a process group the procs fixture ends)
    holder = procs(["unshare", "--net", "sh", "-c",
                    f"ip link set lo up && echo {NS_SOMAXCONN} > /proc/sys/net/core/somaxconn"
                    " && echo ready && exec sleep 600"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "ready"
    ns_file = f"/proc/{holder.pid}/ns/net"
    netns = os.stat(ns_file).st_ino
    assert netns != os.stat("/proc/self/ns/net").st_ino
    enter = ["nsenter", f"--net={ns_file}", "--"]

    port = free_port()
    sock = world_dir / "fpm.sock"
    (world_dir / "php-fpm.conf").write_text(FPM_CONF.format(d=world_dir, sock=sock, port=port))

    def into_cgroup():
        (cg_dir / "cgroup.procs").write_text("0")

    fpm = procs(enter + [PHP_FPM, "-F", "-R", "-y", str(world_dir / "php-fpm.conf")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=into_cgroup)
    host = procs([bl_bins["listen_noaccept"], "tcp", str(port), "8"], stdout=subprocess.PIPE,
                 text=True)
    assert host.stdout.readline().startswith("ready")
    ss = ["ss", "-Hltn", f"sport = :{port}"]
    for _ in range(300):  # php-fpm's pools listen once it has read its config
        if sock.exists() and subprocess.run(enter + ss, capture_output=True,
                                            text=True).stdout.strip():
            break
        assert fpm.poll() is None, (world_dir / "php-fpm.log").read_text()
        subprocess.run(["sleep", "0.1"])
    else:
        pytest.fail("php-fpm did not listen in the namespace")
    return {"netns": netns, "ns_file": ns_file, "enter": enter, "sock": str(sock), "port": port,
            "fpm": fpm, "host": host, "cgroup": cg_path, "cgroup_dir": cg_dir}


def storm(env, bl_bins, family, target, n):
    """n non-blocking connects from inside the namespace and the cgroup (a client in the same
    container as php-fpm); the helper's own counts."""
    cg_procs = env["cgroup_dir"] / "cgroup.procs"
    out = subprocess.run(env["enter"] + [bl_bins["connect_burst"], family, str(target), str(n),
                                         "--exit"], capture_output=True, text=True, check=True,
                         timeout=60, preexec_fn=lambda: cg_procs.write_text("0")).stdout.split()
    return dict(kv.split("=") for kv in out)


def stop(w):
    """Ctrl-C once the storm is over (a slow guest may take seconds to start the clients, so
    no fixed --duration): the summary counts everything up to then."""
    w.p.send_signal(signal.SIGINT)
    return w.result()


def ns_listen_overflows(env):
    """TcpExt ListenOverflows of the namespace (its /proc/net/netstat, read inside it)."""
    text = subprocess.run(env["enter"] + ["cat", "/proc/net/netstat"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    heads = [l.split() for l in text if l.startswith("TcpExt:")]
    return int(dict(zip(heads[0], heads[1]))["ListenOverflows"])


def host_somaxconn():
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


def test_namespaced_php_fpm_overflows(udsprobe, attach_mode, procs, world_dir, bl_bins, ns_fpm):
    env = ns_fpm
    assert host_somaxconn() != NS_SOMAXCONN
    w = Watch(udsprobe, procs, world_dir, ["--interval", "0.5"], attach_args(udsprobe, attach_mode))
    # php-fpm's one worker takes the first connection and waits for its request, so the
    # queue (limit 32) holds 32 more and the rest fail with EAGAIN
    got = storm(env, bl_bins, "unix", env["sock"], 100)
    assert int(got["eagain"]) > 0
    netstat0 = ns_listen_overflows(env)
    storm(env, bl_bins, "tcp", env["port"], 100)
    out, err, events = stop(w)
    ns_overflows = ns_listen_overflows(env) - netstat0

    u = summary_of(events, env["sock"])
    assert u["netns"] == env["netns"]
    assert u["limit"] == NS_SOMAXCONN and u["somaxconn"] == NS_SOMAXCONN
    assert u["owner_comm"].startswith("php-fpm") and u["owner_pid"] == env["fpm"].pid
    assert u["cgroup"] == env["cgroup"] and u["container"] is None
    assert u["overflows"] == int(got["eagain"])
    assert [c["comm"] for c in u["clients"]] == ["connect_burst"]
    # the client as its connect() saw it: in the namespace and the cgroup
    c = u["clients"][0]
    assert (c["netns"], c["cgroup"], c["container"]) == (env["netns"], env["cgroup"], None), c

    tcp = [e for e in events if e["event"] == "summary" and e["family"] == "tcp"
           and e["address"] == f"127.0.0.1:{env['port']}"]
    assert len(tcp) == 2, tcp  # one port, two namespaces: two listeners
    ns_l = [e for e in tcp if e["netns"] == env["netns"]][0]
    host_l = [e for e in tcp if e["netns"] != env["netns"]][0]
    assert ns_l["limit"] == NS_SOMAXCONN and ns_l["cgroup"] == env["cgroup"]
    assert ns_l["owner_pid"] == env["fpm"].pid
    # the SYNs dropped at its full queue (and their retransmits within the run), on this
    # listener: the namespace's own ListenOverflows counter moved by at least as much
    assert 0 < ns_l["overflows"] <= ns_overflows, (ns_l, ns_overflows)
    assert host_l["netns"] == os.stat("/proc/self/ns/net").st_ino
    assert host_l["limit"] == min(8, host_somaxconn()) and host_l["somaxconn"] == host_somaxconn()
    assert host_l["owner_pid"] == env["host"].pid and host_l["cgroup"] != env["cgroup"]
    assert host_l["overflows"] == 0  # the storm was in the namespace
    assert run_line(events)["somaxconn"] == host_somaxconn()
    print(f"\nphp-fpm in netns {env['netns']}: unix overflows {u['overflows']} = the clients' "
          f"EAGAIN {got['eagain']}, limit {u['limit']}; tcp overflows {ns_l['overflows']}, the "
          f"namespace's ListenOverflows +{ns_overflows}")

    # the text: where it is, and where to raise the limit (the namespace's, not the host's)
    assert f"(netns {env['netns']})" in out
    assert f"net.core.somaxconn there {NS_SOMAXCONN}, cgroup {env['cgroup']}" in out
    assert (f"The limit equals net.core.somaxconn of its network namespace ({NS_SOMAXCONN})"
            in out)
    assert f"raise it inside the listener's (netns {env['netns']}), not the host's" in out
    assert f"nsenter --net=/proc/{env['fpm'].pid}/ns/net sysctl -w net.core.somaxconn=" in out


@pytest.mark.parametrize("flt", ["netns-path", "netns-inode", "cgroup"])
def test_netns_and_cgroup_filters(udsprobe, attach_mode, procs, world_dir, bl_bins, ns_fpm, flt):
    env = ns_fpm
    args = {"netns-path": ["--netns", env["ns_file"]],
            "netns-inode": ["--netns", str(env["netns"])],
            "cgroup": ["--cgroup", str(env["cgroup_dir"])]}[flt]
    prom = world_dir / "ns.prom"
    w = Watch(udsprobe, procs, world_dir, args + ["--interval", "0.5", "--prom", str(prom)],
              attach_args(udsprobe, attach_mode))
    got = storm(env, bl_bins, "unix", env["sock"], 60)
    out, err, events = stop(w)
    rows = [e for e in events if e["event"] in ("summary", "interval")]
    summaries = {(e["family"], e["address"]) for e in events if e["event"] == "summary"}
    # exactly php-fpm's two listeners; the host's listener on the same port is absent
    assert summaries == {("unix", env["sock"]), ("tcp", f"127.0.0.1:{env['port']}")}
    assert all(e["netns"] == env["netns"] and e["cgroup"] == env["cgroup"] for e in rows)
    assert summary_of(events, env["sock"])["overflows"] == int(got["eagain"])
    text = prom.read_text()
    assert f'netns="{env["netns"]}",cgroup="{env["cgroup"]}",container=""' in text
    assert f'owner_pid="{env["host"].pid}"' not in text


def test_filters_exclude_everything_else(udsprobe, attach_mode, procs, world_dir, test_cgroup):
    """An empty cgroup and udsprobe's own netns: the namespaced listeners are not there."""
    cg_dir, _ = test_cgroup
    w = Watch(udsprobe, procs, world_dir, ["--cgroup", str(cg_dir), "--duration", "0.5"],
              attach_args(udsprobe, attach_mode))
    out, err, events = w.result()
    assert not [e for e in events if e["event"] == "summary"]
    assert "(no listener matched the filters)" in out


@pytest.mark.userspace
@pytest.mark.parametrize("args,msg", [
    (["--backlog", "--netns", "/nonexistent"], "--netns: '/nonexistent': No such file"),
    (["--backlog", "--netns", "/proc/self/ns/mnt"], "not a network namespace"),
    (["--backlog", "--cgroup", "/tmp"], "not a directory of the cgroup v2 hierarchy"),
    (["--backlog", "--cgroup", "/nonexistent"], "--cgroup: '/nonexistent': No such file"),
    (["--netns", "/proc/self/ns/net"], "--netns needs --backlog"),
    (["--cgroup", "@ROOT@"], "--cgroup needs --backlog or --trace"),
    (["--trace", "--netns", "/proc/self/ns/net"], "--trace does not take --netns"),
    (["--trace", "--cgroup", "/tmp"], "not a directory of the cgroup v2 hierarchy"),
])
def test_ns_usage_errors(udsprobe, args, msg):
    args = [str(cgroup2_root()) if a == "@ROOT@" else a for a in args]
    res = subprocess.run([udsprobe] + args, capture_output=True, text=True)
    assert res.returncode == 2, res
    assert msg in res.stderr
