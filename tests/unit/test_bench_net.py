"""`ukl bench-net` without booting: the sweep's arguments, the client's
report and the plugin's windows, the CSV, the table and the plots."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.bench import counts, net, netplots
from ukl.common.errors import UsageError
from ukl.results import ResultsWriter


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "32"], "--sizes: 32 is out of range; message sizes are 64 to 65536 bytes"),
    (["--sizes", "64,x"], "--sizes '64,x': give whole numbers separated by commas"),
    (["--sizes", "64,64"], "--sizes '64,64': give each value once"),
    (["--inflight", "33"], "--inflight: 33 is out of range; 1 to 32 requests in flight"),
    (["--budget", "10"], "--budget 10: at least 1024 bytes per measurement"),
    (["--protocols", "sctp"], "--protocols 'sctp': choose from tcp, udp"),
    (["--clients", "guest,moon"], "--clients 'guest,moon': choose from guest, host"),
    (["--quick", "--inflight", "4"], "--quick picks its own sizes"),
    (["--name", "a/b"], "--name 'a/b': give a directory name under results/"),
    (["--configs", "stock,nosuch"], "nosuch"),
])
def test_bad_arguments_fail_in_one_line(argv: list[str], message: str) -> None:
    res = ukl("bench-net", *argv)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ukl: error: ") and message in lines[0]


def test_sweeps() -> None:
    full = net.sweep("tcp,udp", "guest,host", None, None, None, False)
    assert full.sizes == (64, 256, 1024, 4096, 16384, 65536)
    assert full.inflight == (1, 4, 16, 32) and full.budget == 1 << 20
    quick = net.sweep("tcp", "guest", None, None, None, True)
    assert (quick.sizes, quick.inflight) == (net.QUICK_SIZES, net.QUICK_INFLIGHT)
    mine = net.sweep("udp", "host", "65536,64", "2", 4096, False)
    assert net.expected(mine) == [("udp", 2, 65507), ("udp", 2, 64)]
    with pytest.raises(UsageError):
        net.sweep("tcp,tcp", "guest", None, None, None, False)


REPORT = """booting
netbench,tcp,1,64,4096,262144,0
noise,tcp,1
netbench,tcp,1,16384,16,262144,0
netbench,udp,1,oops,1,1,1
"""


def _windows(insns: list[int]) -> dict[str, counts.Window]:
    out = {f"0.{k}": counts.Window(1, {"insns": n, "entries": 3 * k, "iret": k})
           for k, n in enumerate(insns)}
    out["total"] = counts.Window(1, {"insns": sum(insns) * 2, "entries": 0, "iret": 0})
    return out


def test_report_and_windows_combine_in_order() -> None:
    sw = net.sweep("tcp", "guest", None, None, 256 << 10, False)
    sw = net.Sweep(sw.protocols, sw.clients, (64, 16384), (1,), sw.budget)
    rows = net.combine(net.parse(REPORT), _windows([26_214_400, 1_310_720]), "stock",
                       "guest", sw)
    assert [(r.size, r.messages, r.bytes, r.insns) for r in rows] == [
        (64, 4096, 262144, 26_214_400), (16384, 16, 262144, 1_310_720)]
    assert rows[0].bytes_per_insn == pytest.approx(0.01)
    assert rows[1].bytes_per_insn == pytest.approx(0.2) and rows[1].entries == 3
    assert rows[1].irets == 1
    with pytest.raises(ValueError, match="no counting window for measurement 1"):
        net.combine(net.parse(REPORT), _windows([100]), "stock", "guest", sw)
    with pytest.raises(ValueError, match="reported 1 of 2"):
        net.combine(net.parse(REPORT)[:1], _windows([100, 200]), "stock", "guest", sw)


def _rows() -> list[net.Measured]:
    out = []
    for config, scale in (("stock", 1.0), ("ukl-ret-byp", 0.9)):
        for client in ("guest", "host"):
            for protocol in ("tcp", "udp"):
                for inflight in (1, 4):
                    for size in (64, 1024, 65536):
                        insns = int((20_000 + size) * 100 * scale)
                        out.append(net.Measured(config, client, protocol, inflight, size,
                                                100, 100 * size, insns, 250, 30, 0))
    return out


def test_csv_markdown_meta_and_plots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))
    rows = _rows()
    out = ResultsWriter("n", "ukl bench-net --name n")
    out.csv("net.csv", net.CSV_HEADER, net.csv_rows(rows))
    assert net.read_csv(out.dir / "net.csv") == rows
    md = net.markdown(rows, ["stock", "ukl-ret-byp"])
    assert "### TCP stream into the sink, the client in the guest" in md
    assert "### UDP echo, the client on the host: the server side only" in md
    # 100 messages of 64 B over 2,006,400 instructions; 0.9x the instructions.
    assert "| 1 | 64 | 0.0032 | 0.0035 | 1.111 | 20064 | 0.30 | 0 |" in md
    assert "ukl-ret-byp/stock" in md and "payload bytes per guest instruction" in md
    written = netplots.write_all(rows, ["stock", "ukl-ret-byp"], tmp_path)
    assert [p.name for p in written] == ["net-guest.png", "net-host.png"]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


def test_replot_needs_a_csv(tmp_path: Path) -> None:
    res = ukl("bench-net", "--replot", "--name", "none", env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode != 0
    assert res.stderr.strip().startswith("ukl: error: no ") and "net.csv" in res.stderr


def test_udp_forwards_reach_qemu() -> None:
    from ukl.qemu import command as qemu
    opts = qemu.RunOptions(kernel=Path("k"), initramfs=Path("i"), forwards=[(1, 2)],
                           udp_forwards=[(3, 4)])
    nic = qemu._network(opts)
    assert nic == ["-nic", "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:1-:2,"
                   "hostfwd=udp:127.0.0.1:3-:4"]
