"""Importing scapy without the parts this tool never uses.

scapy 2.5's scapy.data parses Wireshark's manuf file (52,000 OUIs, for MAC
vendor names) when it is first imported, if Wireshark is installed, and its
config imports the cryptography package (for its TLS and IPsec layers).
That was two thirds of the import's time: some 0.3 s on this machine's host,
12 s of a 17 s import in the debug-kernel guest (2026-12-06). The tool needs
neither: its packets are Ether / IP or IPv6 / UDP / BTH. prepare() imports
scapy.data with the manuf file hidden and cryptography marked unavailable;
later scapy versions that load these lazily are unaffected. Call it before
the first scapy import.
"""
import os
import sys

_done = False


def prepare():
    global _done
    if _done:
        return
    _done = True
    exists = os.path.exists

    def no_manuf(path):
        return False if str(path).endswith("share/wireshark/manuf") else exists(path)

    sys.modules.setdefault("cryptography", None)  # ImportError: scapy goes without
    os.path.exists = no_manuf
    try:
        import scapy.data  # noqa: F401
    except ImportError:
        pass  # scapy missing: the caller's own import reports it
    finally:
        os.path.exists = exists
