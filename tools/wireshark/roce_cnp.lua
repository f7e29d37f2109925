-- SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
--
-- roce_cnp.lua: Wireshark/tshark dissector for the RoCEv2 Congestion
-- Notification Packet (CNP, BTH opcode 0x81, IBTA Annex A17 section 17.9.3).
--
-- Wireshark 4.0 (Debian 12) does not know the RoCEv2 CNP: it prints
-- "Opcode: Unknown (129)", shows the FECN/BECN byte as "Reserved: 40" and
-- lumps the 16 reserved bytes and the ICRC into "Unknown/Vendor Specific
-- Data". (Its opcode table calls 0x80 "CNP": that is native InfiniBand's.)
--
-- Usage:
--   tshark -X lua_script:tools/wireshark/roce_cnp.lua -r cap.pcap -Y roce_cnp
--   tshark -X lua_script:tools/wireshark/roce_cnp.lua -r cap.pcap -Y roce_cnp \
--          -T fields -e roce_cnp.destqp -e roce_cnp.becn -e roce_cnp.icrc_ok
--   tshark -X lua_script:tools/wireshark/roce_cnp.lua -r cap.pcap \
--          -Y 'roce_cnp && _ws.expert.severity >= warning'
--   (a correct CNP matches none of: _ws.expert.severity >= warning,
--   _ws.malformed, roce_cnp.icrc_ok == 0, roce_cnp.becn == 0)
--   For the GUI, copy it to ~/.local/lib/wireshark/plugins/ instead (then
--   do not also pass -X, or the protocol is registered twice).
--   Test: tools/wireshark/test_roce_cnp.sh
--
-- What it does:
--  * Takes over UDP port 4791 from the built-in RRoCE ("infiniband")
--    dissector. A UDP payload whose first byte (BTH opcode) is 0x81 is
--    dissected here as "RoCEv2 CNP" (filter roce_cnp); every other packet is
--    handed to the built-in dissector, whose tree is unchanged. The one
--    visible difference for those packets: frame.protocols ("Protocols in
--    frame") lists roce_cnp before infiniband, because Wireshark records
--    every dissector a packet passes through and Lua cannot opt out.
--  * Fields: roce_cnp.{opcode,se,migreq,padcnt,tver,pkey,fecn,becn,resv6,
--    destqp,ackreq,resv7,psn,reserved,extra,icrc,icrc_calc,icrc_ok}.
--    The ICRC is shown as it is stored, least-significant byte first
--    (bytes 1d ed d2 17 are 0x17d2ed1d), like the kernel's sroce_icrc_get().
--  * roce_cnp.icrc_ok is computed here: CRC-32 (reflected 0xEDB88320, init
--    ~0, final ~) over 8 bytes of 0xff (pseudo-LRH), the IP header with
--    IPv4 TOS/TTL/checksum or IPv6 traffic class/flow label/hop limit set to
--    ones, the UDP header with its checksum set to ones, the BTH with byte 4
--    (FECN, BECN, resv6) set to ones, then the rest of the UDP payload up to
--    the trailing 4-byte ICRC. Same masks as kernel/proto/sroce_icrc.c and
--    rxe. IPv4 with options or IPv6 with extension headers is not RoCEv2 as
--    our stack (and rxe) sends it: the ICRC is then not checked (a warning).
--  * Expert info: length not exactly BTH 12 + reserved 16 + ICRC 4 = 32
--    bytes (error, separate messages for short and long), ICRC wrong
--    (error), BECN clear (warning), reserved bytes non-zero (warning),
--    P_Key not 0xFFFF (warning), TVer not 0 (warning), PSN not 0 (note),
--    other BTH bits set: FECN, SE, MigReq, PadCnt, AckReq, resv6, resv7
--    (note). A correct CNP gets no expert info at all.
--
-- The ICRC, length and reserved-byte checks assume the whole packet was
-- captured; with a short snaplen the ICRC is reported as not verified (note).

local CNP_OPCODE = 0x81
local ROCE_PORT = 4791
local BTH_LEN = 12
local RSVD_LEN = 16
local ICRC_LEN = 4
local CNP_LEN = BTH_LEN + RSVD_LEN + ICRC_LEN -- 32 bytes of UDP payload

local band, bor, bxor, bnot, rshift =
    bit32.band, bit32.bor, bit32.bxor, bit32.bnot, bit32.rshift
local sbyte, schar = string.byte, string.char

-- CRC-32 ------------------------------------------------------------------

local CRC_TAB = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) ~= 0 then
            c = bxor(rshift(c, 1), 0xEDB88320)
        else
            c = rshift(c, 1)
        end
    end
    CRC_TAB[i] = c
end

-- Raw update, no pre- or post-inversion (the kernel's crc32_le()).
local function crc32_update(crc, s)
    for i = 1, #s do
        crc = bxor(CRC_TAB[band(bxor(crc, sbyte(s, i)), 0xff)], rshift(crc, 8))
    end
    return crc
end

-- Standard check value, and the state after the pseudo-LRH, which must be
-- the seed the kernel and rxe use (SROCE_ICRC_SEED).
assert(bnot(crc32_update(0xffffffff, "123456789")) == 0xCBF43926,
       "roce_cnp.lua: CRC-32 table is wrong")
local ICRC_SEED = crc32_update(0xffffffff, string.rep("\255", 8))
assert(ICRC_SEED == 0xDEBB20E3, "roce_cnp.lua: unexpected ICRC seed")

-- Replace byte i (1-based) of s with v.
local function setbyte(s, i, v)
    return s:sub(1, i - 1) .. schar(v) .. s:sub(i + 1)
end

-- ICRC over the masked IP header (ip), UDP header (udp) and UDP payload up
-- to but not including the ICRC (pl, starting with the BTH).
local function roce_icrc(ip, ipv6, udp, pl)
    if ipv6 then
        ip = schar(bor(sbyte(ip, 1), 0x0f)) .. "\255\255\255" ..
             ip:sub(5, 7) .. "\255" .. ip:sub(9)
    else
        ip = setbyte(ip, 2, 0xff)                         -- TOS
        ip = setbyte(ip, 9, 0xff)                         -- TTL
        ip = ip:sub(1, 10) .. "\255\255" .. ip:sub(13)    -- header checksum
    end
    udp = udp:sub(1, 6) .. "\255\255"                     -- UDP checksum
    pl = setbyte(pl, 5, 0xff)                             -- FECN, BECN, resv6
    local crc = crc32_update(ICRC_SEED, ip)
    crc = crc32_update(crc, udp)
    crc = crc32_update(crc, pl)
    return bnot(crc)
end

-- Protocol and fields ----------------------------------------------------

local p_cnp = Proto("roce_cnp", "RoCEv2 CNP")

local opcode_vals = { [CNP_OPCODE] = "RoCEv2 CNP" }

local hf = {
    opcode = ProtoField.uint8("roce_cnp.opcode", "Opcode", base.HEX, opcode_vals),
    se     = ProtoField.bool("roce_cnp.se", "Solicited Event", 8, nil, 0x80),
    migreq = ProtoField.bool("roce_cnp.migreq", "MigReq", 8, nil, 0x40),
    padcnt = ProtoField.uint8("roce_cnp.padcnt", "Pad Count", base.DEC, nil, 0x30),
    tver   = ProtoField.uint8("roce_cnp.tver", "Header Version", base.DEC, nil, 0x0f),
    pkey   = ProtoField.uint16("roce_cnp.pkey", "Partition Key", base.HEX),
    fecn   = ProtoField.bool("roce_cnp.fecn", "FECN", 8, nil, 0x80),
    becn   = ProtoField.bool("roce_cnp.becn", "BECN", 8, nil, 0x40),
    resv6  = ProtoField.uint8("roce_cnp.resv6", "Reserved (6 bits)", base.HEX, nil, 0x3f),
    destqp = ProtoField.uint24("roce_cnp.destqp", "Destination QP", base.HEX),
    ackreq = ProtoField.bool("roce_cnp.ackreq", "Acknowledge Request", 8, nil, 0x80),
    resv7  = ProtoField.uint8("roce_cnp.resv7", "Reserved (7 bits)", base.HEX, nil, 0x7f),
    psn    = ProtoField.uint24("roce_cnp.psn", "Packet Sequence Number", base.DEC),
    reserved = ProtoField.bytes("roce_cnp.reserved", "Reserved (16 bytes)"),
    extra  = ProtoField.bytes("roce_cnp.extra", "Unexpected trailing data"),
    icrc   = ProtoField.uint32("roce_cnp.icrc", "Invariant CRC", base.HEX),
    icrc_calc = ProtoField.uint32("roce_cnp.icrc_calc", "Calculated ICRC", base.HEX),
    icrc_ok = ProtoField.bool("roce_cnp.icrc_ok", "ICRC correct"),
}
p_cnp.fields = {
    hf.opcode, hf.se, hf.migreq, hf.padcnt, hf.tver, hf.pkey, hf.fecn,
    hf.becn, hf.resv6, hf.destqp, hf.ackreq, hf.resv7, hf.psn, hf.reserved,
    hf.extra, hf.icrc, hf.icrc_calc, hf.icrc_ok,
}

local ef = {
    short = ProtoExpert.new("roce_cnp.len_short", "CNP too short",
                            expert.group.MALFORMED, expert.severity.ERROR),
    long = ProtoExpert.new("roce_cnp.len_long", "CNP too long",
                           expert.group.MALFORMED, expert.severity.ERROR),
    icrc_bad = ProtoExpert.new("roce_cnp.icrc_bad", "Bad ICRC",
                               expert.group.CHECKSUM, expert.severity.ERROR),
    icrc_unverified = ProtoExpert.new("roce_cnp.icrc_unverified",
                                      "ICRC not verified",
                                      expert.group.CHECKSUM, expert.severity.NOTE),
    ip_opts = ProtoExpert.new("roce_cnp.ip_options",
                              "IPv4 options or IPv6 extension headers",
                              expert.group.PROTOCOL, expert.severity.WARN),
    becn = ProtoExpert.new("roce_cnp.becn_clear", "BECN not set in CNP",
                           expert.group.PROTOCOL, expert.severity.WARN),
    rsvd = ProtoExpert.new("roce_cnp.reserved_nonzero",
                           "CNP reserved bytes not zero",
                           expert.group.PROTOCOL, expert.severity.WARN),
    pkey = ProtoExpert.new("roce_cnp.pkey_not_default",
                           "CNP P_Key is not 0xFFFF",
                           expert.group.PROTOCOL, expert.severity.WARN),
    tver = ProtoExpert.new("roce_cnp.tver_nonzero", "BTH TVer is not 0",
                           expert.group.PROTOCOL, expert.severity.WARN),
    psn = ProtoExpert.new("roce_cnp.psn_nonzero", "CNP PSN is not 0",
                          expert.group.PROTOCOL, expert.severity.NOTE),
    bits = ProtoExpert.new("roce_cnp.unexpected_bits",
                           "Unexpected BTH bits set in CNP",
                           expert.group.PROTOCOL, expert.severity.NOTE),
}
p_cnp.experts = {
    ef.short, ef.long, ef.icrc_bad, ef.icrc_unverified, ef.ip_opts, ef.becn,
    ef.rsvd, ef.pkey, ef.tver, ef.psn, ef.bits,
}

-- Header locations, for the ICRC -----------------------------------------

local f_ip = Field.new("ip")
local f_ipv6 = Field.new("ipv6")
local f_udp = Field.new("udp")

-- Find the IP and UDP headers this UDP payload (len bytes, all captured)
-- came with. Returns { ip = raw IP header, ipv6 = bool, udp = raw UDP
-- header }, or { why = reason } if they cannot be found, with bad_ip set if
-- the IP header is one RoCEv2 does not use (options, extension headers).
local function find_headers(tvb, len)
    local pl_off = tvb:offset()
    local udp_fi
    for _, fi in ipairs({ f_udp() }) do
        if fi.offset + 8 == pl_off and fi.len == 8 then
            udp_fi = fi
        end
    end
    if not udp_fi then
        return { why = "UDP header not found" }
    end
    local src = udp_fi.source
    -- Make sure the payload really follows this UDP header in its tvb.
    if src:len() < pl_off + len or src:raw(pl_off, len) ~= tvb:raw(0, len) then
        return { why = "UDP header not found" }
    end
    local ip_fi, ipv6
    for _, fi in ipairs({ f_ip() }) do
        if fi.offset < udp_fi.offset and (not ip_fi or fi.offset > ip_fi.offset) then
            ip_fi, ipv6 = fi, false
        end
    end
    for _, fi in ipairs({ f_ipv6() }) do
        if fi.offset < udp_fi.offset and (not ip_fi or fi.offset > ip_fi.offset) then
            ip_fi, ipv6 = fi, true
        end
    end
    if not ip_fi then
        return { why = "IP header not found" }
    end
    local ip_len = udp_fi.offset - ip_fi.offset
    local ip = src:raw(ip_fi.offset, ip_len)
    local v = rshift(sbyte(ip, 1), 4)
    if ipv6 then
        if v ~= 6 or ip_len < 40 then
            return { why = "IPv6 header not found" }
        end
        if ip_len ~= 40 or sbyte(ip, 7) ~= 17 then
            return { why = "IPv6 extension headers", bad_ip = true }
        end
    else
        if v ~= 4 or ip_len < 20 then
            return { why = "IPv4 header not found" }
        end
        if ip_len ~= 20 or band(sbyte(ip, 1), 0x0f) ~= 5 or sbyte(ip, 10) ~= 17 then
            return { why = "IPv4 options", bad_ip = true }
        end
    end
    return { ip = ip, ipv6 = ipv6, udp = src:raw(udp_fi.offset, 8) }
end

-- Dissector --------------------------------------------------------------

local udp_table = DissectorTable.get("udp.port")
local builtin = udp_table:get_dissector(ROCE_PORT)

local function dissect_cnp(tvb, pinfo, tree)
    local len = tvb:len()
    local rlen = tvb:reported_len()
    local t = tree:add(p_cnp, tvb())

    pinfo.cols.protocol = "RoCEv2 CNP"

    -- BTH, as far as it was captured.
    local bth = t:add(tvb(0, math.min(len, BTH_LEN)), "Base Transport Header")
    bth:add(hf.opcode, tvb(0, 1))
    local b1, b4, b8, pkey, qpn, psn
    if len >= 2 then
        b1 = tvb(1, 1):uint()
        bth:add(hf.se, tvb(1, 1))
        bth:add(hf.migreq, tvb(1, 1))
        bth:add(hf.padcnt, tvb(1, 1))
        bth:add(hf.tver, tvb(1, 1))
    end
    if len >= 4 then
        pkey = tvb(2, 2):uint()
        bth:add(hf.pkey, tvb(2, 2))
    end
    if len >= 5 then
        b4 = tvb(4, 1):uint()
        bth:add(hf.fecn, tvb(4, 1))
        bth:add(hf.becn, tvb(4, 1))
        bth:add(hf.resv6, tvb(4, 1))
    end
    if len >= 8 then
        qpn = tvb(5, 3):uint()
        bth:add(hf.destqp, tvb(5, 3))
    end
    if len >= 9 then
        b8 = tvb(8, 1):uint()
        bth:add(hf.ackreq, tvb(8, 1))
        bth:add(hf.resv7, tvb(8, 1))
    end
    if len >= 12 then
        psn = tvb(9, 3):uint()
        bth:add(hf.psn, tvb(9, 3))
    end

    -- Layout by the length UDP reports: the ICRC is always the last 4
    -- bytes, the reserved bytes follow the BTH, and whatever lies between
    -- 16 reserved bytes and the ICRC is extra. Items are clipped to what
    -- was captured (len).
    local icrc_off = (rlen >= BTH_LEN + ICRC_LEN) and (rlen - ICRC_LEN) or nil
    local body_end = icrc_off or rlen
    local function captured(off, stop)
        stop = math.min(stop, len)
        if stop > off then
            return tvb(off, stop - off)
        end
    end
    local r = captured(BTH_LEN, math.min(BTH_LEN + RSVD_LEN, body_end))
    if r then
        local ri = t:add(hf.reserved, r)
        if r:bytes():tohex():find("[^0]") then
            ri:add_proto_expert_info(ef.rsvd)
        end
    end
    local x = captured(BTH_LEN + RSVD_LEN, body_end)
    if x then
        t:add(hf.extra, x)
    end

    -- Length.
    if rlen < CNP_LEN then
        t:add_proto_expert_info(ef.short, string.format(
            "CNP too short: %d bytes of UDP payload, expected %d (BTH 12 + reserved 16 + ICRC 4)",
            rlen, CNP_LEN))
    elseif rlen > CNP_LEN then
        t:add_proto_expert_info(ef.long, string.format(
            "CNP too long: %d bytes of UDP payload, expected %d (BTH 12 + reserved 16 + ICRC 4)",
            rlen, CNP_LEN))
    end

    -- ICRC.
    if icrc_off and icrc_off + ICRC_LEN > len then
        t:add_proto_expert_info(ef.icrc_unverified,
                                "ICRC not verified: packet not fully captured")
    elseif icrc_off then
        local icrc_r = tvb(icrc_off, ICRC_LEN)
        local icrc = icrc_r:le_uint()
        local ii = t:add_le(hf.icrc, icrc_r)
        local h = find_headers(tvb, len)
        if h.bad_ip then
            ii:add_proto_expert_info(ef.ip_opts, "ICRC not checked: " .. h.why)
        elseif h.why then
            ii:add_proto_expert_info(ef.icrc_unverified, "ICRC not verified: " .. h.why)
        else
            local calc = roce_icrc(h.ip, h.ipv6, h.udp, tvb:raw(0, icrc_off))
            local ci = t:add(hf.icrc_calc, icrc_r, calc)
            ci:set_generated()
            local oi = t:add(hf.icrc_ok, icrc_r, calc == icrc)
            oi:set_generated()
            if calc ~= icrc then
                ii:append_text(" [incorrect]")
                ii:add_proto_expert_info(ef.icrc_bad, string.format(
                    "Bad ICRC: 0x%08x, expected 0x%08x (on the wire %02x %02x %02x %02x)",
                    icrc, calc, band(calc, 0xff), band(rshift(calc, 8), 0xff),
                    band(rshift(calc, 16), 0xff), rshift(calc, 24)))
            else
                ii:append_text(" [correct]")
            end
        end
    end

    -- BTH field checks.
    if b4 and band(b4, 0x40) == 0 then
        bth:add_proto_expert_info(ef.becn)
    end
    if pkey and pkey ~= 0xffff then
        bth:add_proto_expert_info(ef.pkey, string.format(
            "CNP P_Key is 0x%04x, expected 0xffff", pkey))
    end
    if b1 and band(b1, 0x0f) ~= 0 then
        bth:add_proto_expert_info(ef.tver)
    end
    if psn and psn ~= 0 then
        bth:add_proto_expert_info(ef.psn, string.format("CNP PSN is %d, expected 0", psn))
    end
    local odd = {}
    if b1 and band(b1, 0x80) ~= 0 then odd[#odd + 1] = "SE" end
    if b1 and band(b1, 0x40) ~= 0 then odd[#odd + 1] = "MigReq" end
    if b1 and band(b1, 0x30) ~= 0 then odd[#odd + 1] = "PadCnt" end
    if b4 and band(b4, 0x80) ~= 0 then odd[#odd + 1] = "FECN" end
    if b4 and band(b4, 0x3f) ~= 0 then odd[#odd + 1] = "resv6" end
    if b8 and band(b8, 0x80) ~= 0 then odd[#odd + 1] = "AckReq" end
    if b8 and band(b8, 0x7f) ~= 0 then odd[#odd + 1] = "resv7" end
    if #odd > 0 then
        bth:add_proto_expert_info(ef.bits, "Unexpected BTH bits set in CNP: " ..
                                  table.concat(odd, ", "))
    end

    local info = "CNP"
    if qpn then
        info = string.format("CNP QP=0x%06x", qpn)
    end
    if b4 and band(b4, 0x40) ~= 0 then
        info = info .. " BECN"
    end
    pinfo.cols.info = info
    t:append_text(qpn and string.format(", DestQP: 0x%06x", qpn) or "")
    return rlen
end

function p_cnp.dissector(tvb, pinfo, tree)
    if tvb:len() >= 1 and tvb(0, 1):uint() == CNP_OPCODE then
        return dissect_cnp(tvb, pinfo, tree)
    end
    if not builtin then
        return 0
    end
    -- Dissector:call turns an exception in the built-in dissector (e.g. a
    -- truncated RETH) into a "Malformed" item plus a Lua error; the item is
    -- what Wireshark shows anyway, so swallow the error.
    local ok, n = pcall(builtin.call, builtin, tvb, pinfo, tree)
    if ok then
        return n
    end
    return tvb:reported_len()
end

udp_table:add(ROCE_PORT, p_cnp)
