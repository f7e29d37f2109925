"""RoCEv2 on the wire as bytes: constants, the ICRC, transport headers."""

import os
import random
import struct
import time
import zlib

# --- RoCEv2 constants -----------------------------------------------------------

ROCE_PORT = 4791
ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
SO_RCVBUFFORCE = 33
PHANTOM_BASE = 0xA00000      # fake remote QPNs of the victims (sender side)
PHANTOM_SPAN = 0x10000
MCAST_QPN = 0xFFFFFF
GSI_QKEY = 0x80010000

# Opcodes (IBTA vol. 1 ch. 9, Annex A17 for the CNP).
RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST, RC_SEND_LAST_IMM = 0x00, 0x01, 0x02, 0x03
RC_SEND_ONLY, RC_SEND_ONLY_IMM = 0x04, 0x05
RC_WRITE_FIRST, RC_WRITE_MIDDLE, RC_WRITE_LAST, RC_WRITE_LAST_IMM = 0x06, 0x07, 0x08, 0x09
RC_WRITE_ONLY, RC_WRITE_ONLY_IMM, RC_READ_REQ = 0x0A, 0x0B, 0x0C
RC_READ_RESP_FIRST, RC_READ_RESP_MIDDLE, RC_READ_RESP_LAST, RC_READ_RESP_ONLY = 0x0D, 0x0E, 0x0F, 0x10
RC_ACK, RC_ATOMIC_ACK, RC_CMP_SWAP, RC_FETCH_ADD = 0x11, 0x12, 0x13, 0x14
RC_SEND_LAST_INV, RC_SEND_ONLY_INV, RC_ATOMIC_WRITE = 0x16, 0x17, 0x1D
UC = 0x20
UD_SEND_ONLY, UD_SEND_ONLY_IMM = 0x64, 0x65
CNP = 0x81
XRC = 0xA0

# Header length (BTH .. last extension header) of every opcode sroce knows;
# anything else is reserved or unimplemented and must be dropped as malformed.
HDR_LEN = {}
for _t in (0x00, 0x20):
    for _o, _l in ((0, 12), (1, 12), (2, 12), (3, 16), (4, 12), (5, 16), (6, 28), (7, 12),
                   (8, 12), (9, 16), (0xA, 28), (0xB, 32)):
        HDR_LEN[_t | _o] = _l
HDR_LEN.update({0x0C: 28, 0x0D: 16, 0x0E: 12, 0x0F: 16, 0x10: 16, 0x11: 16, 0x12: 24,
                0x13: 40, 0x14: 40, 0x16: 16, 0x17: 16, 0x1D: 28, 0x64: 20, 0x65: 24, 0x81: 28})
for _o in range(0x00, 0x1E):
    if _o in HDR_LEN and _o not in (0x1D,):
        _l = HDR_LEN[_o]
        # XRC requests carry a 4-byte XRCETH; responses are RC's.
        HDR_LEN[XRC | _o] = _l + 4 if _o in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xA, 0xB, 0xC, 0x13, 0x14,
                                            0x16, 0x17) else _l
HDR_LEN[XRC | 0x1D] = 32
VALID_OPCODES = sorted(HDR_LEN)
RESERVED_OPCODES = [op for op in range(256) if op not in HDR_LEN]

# AETH syndromes.
AETH_ACK = 0x1F            # ACK, credit count "invalid" (sroce sends this)
NAK_SEQ, NAK_INV, NAK_ACC, NAK_OP = 0x60, 0x61, 0x62, 0x63
AETH_RNR = 0x20            # RNR NAK; the low 5 bits are the timer code (1: 0.01 ms)

# ibv_wc_status values used here.
WC_SUCCESS, WC_LOC_LEN_ERR, WC_LOC_PROT_ERR, WC_WR_FLUSH_ERR, WC_REM_INV_REQ_ERR = 0, 1, 4, 5, 9
WC_RETRY_EXC_ERR = 12


def log(*a):
    print(*a, flush=True)


def _stamp():
    """ [t=N s] on the selftest's clock (SROCE_T0: its start, epoch s)."""
    t0 = os.environ.get("SROCE_T0")
    return " [t=%.0fs]" % (time.time() - float(t0)) if t0 else ""


# --- checksums and ICRC ---------------------------------------------------------

_FF8 = zlib.crc32(b"\xff" * 8)     # CRC state after the masked pseudo-LRH


def icrc(ip_pkt):
    """ICRC of an IP packet (IPv4 with IHL 5, or IPv6), ICRC excluded.

    CRC-32 (zlib's) over 8 bytes of ones, then the packet with IPv4 TOS, TTL
    and header checksum (IPv6 traffic class, flow label, hop limit), the UDP
    checksum and BTH byte 4 (FECN, BECN, resv6) forced to ones. Returned as
    the 4 bytes that go on the wire (least significant first).
    """
    if ip_pkt[0] >> 4 == 4:
        m = bytearray(ip_pkt[:40])
        rest = 40
        if len(m) == 40:
            m[1] = m[8] = m[10] = m[11] = m[26] = m[27] = m[32] = 0xFF
        else:
            _mask(m, (1, 8, 10, 11, 26, 27, 32))
    else:
        m = bytearray(ip_pkt[:60])
        m[0] |= 0x0F
        rest = 60
        _mask(m, (1, 2, 3, 7, 46, 47, 52))
    crc = zlib.crc32(m, _FF8)
    crc = zlib.crc32(memoryview(ip_pkt)[rest:], crc)
    return struct.pack("<I", crc)


def _mask(m, idx):
    for i in idx:
        if i < len(m):
            m[i] = 0xFF


def _crc32_bitwise(data, crc=0xFFFFFFFF):
    """Independent CRC-32 (reflected 0xEDB88320), to cross-check zlib's use."""
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
    return crc


def icrc_bitwise(ip_pkt):
    """The ICRC the way rxe computes it: seed 0xdebb20e3, no pseudo-LRH."""
    v6 = ip_pkt[0] >> 4 == 6
    n = 60 if v6 else 40
    m = bytearray(ip_pkt[:n])
    if v6:
        m[0] |= 0x0F
        for i in (1, 2, 3, 7, 46, 47, 52):
            m[i] = 0xFF
    else:
        for i in (1, 8, 10, 11, 26, 27, 32):
            m[i] = 0xFF
    crc = _crc32_bitwise(bytes(m) + bytes(ip_pkt[n:]), 0xDEBB20E3)
    return struct.pack("<I", crc ^ 0xFFFFFFFF)


def inet_csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


# --- transport headers -----------------------------------------------------------


def bth(op, dqpn, psn, *, pad=0, se=0, mig=0, tver=0, pkey=0xFFFF, fecn=0, becn=0,
        resv6=0, ackreq=0, resv7=0):
    b1 = (se << 7) | (mig << 6) | ((pad & 3) << 4) | (tver & 0xF)
    b4 = (fecn << 7) | (becn << 6) | (resv6 & 0x3F)
    return struct.pack("!BBHII", op, b1, pkey, (b4 << 24) | (dqpn & 0xFFFFFF),
                       (((ackreq << 7) | resv7) << 24) | (psn & 0xFFFFFF))


def reth(va, rkey, dlen):
    return struct.pack("!QII", va & (2**64 - 1), rkey & 0xFFFFFFFF, dlen & 0xFFFFFFFF)


def atomiceth(va, rkey, swap_add, compare=0):
    return struct.pack("!QIQQ", va & (2**64 - 1), rkey, swap_add, compare)


def aeth(syndrome, msn=0):
    return struct.pack("!I", (syndrome << 24) | (msn & 0xFFFFFF))


def deth(qkey, sqpn):
    return struct.pack("!II", qkey, sqpn & 0xFFFFFF)


def tp(op, dqpn, psn, hdrs=b"", payload=b"", pad=None, padbytes=None, **kw):
    """A transport packet (BTH .. pad, no ICRC). PadCnt and the pad bytes
    follow the payload unless given."""
    if pad is None:
        pad = -len(payload) & 3
    if padbytes is None:
        padbytes = b"\0" * (-len(payload) & 3)
    return bth(op, dqpn, psn, pad=pad, **kw) + hdrs + payload + padbytes


def pattern(n, seed):
    return random.Random(seed).randbytes(n)
