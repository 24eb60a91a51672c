//! setsockopt/getsockopt: options whose value holds a pointer the kernel follows.
//!
//! The layout checks `optval` and `optlen` against the window, but for a few options the value
//! is a struct with a pointer inside, which the kernel reads from or writes to: with a VMM
//! address there a guest read VMM memory through a socket filter (SO_ATTACH_FILTER: the filter
//! is copied from `sock_fprog.filter`, then readable back with SO_GET_FILTER) and wrote VMM memory
//! with TCP_ZEROCOPY_RECEIVE (received bytes copied to `copybuf_address`: a proxy thread's stack
//! overwritten, the VMM's control flow taken). Classic BPF programs (`sock_fprog`) are checked
//! and copied ([`takes_fprog`]); the other such options are refused with ENOPROTOOPT, as a
//! kernel without the feature answers, and reported once.

/// SOL_SOCKET options: classic BPF programs (a `sock_fprog` with a filter pointer) and eBPF
/// program fds (an fd the guest could not have made: bpf() is not served).
const SOL_SOCKET: i32 = 1;
const SO_ATTACH_FILTER: i32 = 26;
const SO_ATTACH_BPF: i32 = 50;
const SO_ATTACH_REUSEPORT_CBPF: i32 = 51;
const SO_ATTACH_REUSEPORT_EBPF: i32 = 52;
/// IPPROTO_TCP: `struct tcp_zerocopy_receive` holds `address`, `copybuf_address`, `msg_control`.
const SOL_TCP: i32 = 6;
const TCP_ZEROCOPY_RECEIVE: i32 = 35;
/// SOL_IP / SOL_IPV6: netfilter's table replacements hold a `counters` pointer (ip, ip6, arp
/// tables), ebtables' entries and counters pointers both ways.
const SOL_IP: i32 = 0;
const SOL_IPV6: i32 = 41;
const XT_SO_SET_REPLACE: i32 = 64;
const ARPT_SO_SET_REPLACE: i32 = 96;
const EBT_SO_SET_ENTRIES: i32 = 128;
const EBT_SO_GET_ENTRIES: i32 = 130;
const EBT_SO_GET_INIT_ENTRIES: i32 = 132;
/// SOL_PACKET: PACKET_FANOUT_DATA takes a `sock_fprog`.
const SOL_PACKET: i32 = 263;
const PACKET_FANOUT_DATA: i32 = 22;
/// SOL_RDS: memory-region options carry user addresses.
const SOL_RDS: i32 = 276;
/// SOL_XDP: XDP_UMEM_REG registers a user memory region by address.
const SOL_XDP: i32 = 283;
const XDP_UMEM_REG: i32 = 4;
/// SOL_MPTCP: MPTCP_FULL_INFO holds two user pointers the kernel writes through (the subflows'
/// tcp_info and addresses): a guest made the kernel write at any VMM address (the IDT's page
/// fault gate); the other MPTCP options are refused with it.
const SOL_MPTCP: i32 = 284;
/// Options whose kernel write is not bounded by `*optlen` in bytes: SO_GET_FILTER (optlen counts
/// 8-byte instructions), IP_MSFILTER and MCAST_MSFILTER (as many sources as the list holds,
/// counted by a field of the buffer), TCP_AO_GET_KEYS (as many keys as a field says).
const SO_GET_FILTER: i32 = SO_ATTACH_FILTER;
const IP_MSFILTER: i32 = 41;
const MCAST_MSFILTER: i32 = 48;
const TCP_AO_GET_KEYS: i32 = 41;

/// Whether setsockopt (`level`, `name`) takes a `struct sock_fprog` (a classic BPF program by
/// pointer): the proxy checks the program's memory and hands the kernel a copy.
pub fn takes_fprog(level: i32, name: i32) -> bool {
    matches!(
        (level, name),
        (SOL_SOCKET, SO_ATTACH_FILTER | SO_ATTACH_REUSEPORT_CBPF) | (SOL_PACKET, PACKET_FANOUT_DATA)
    )
}

/// The name of an option refused for a pointer inside its value, if (`level`, `name`) is one.
pub fn refused(level: i32, name: i32, set: bool) -> Option<&'static str> {
    Some(match (level, name, set) {
        (SOL_SOCKET, SO_ATTACH_BPF, true) => "SO_ATTACH_BPF",
        (SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, true) => "SO_ATTACH_REUSEPORT_EBPF",
        (SOL_TCP, TCP_ZEROCOPY_RECEIVE, false) => "TCP_ZEROCOPY_RECEIVE",
        (SOL_IP | SOL_IPV6, XT_SO_SET_REPLACE, true) => "IPT_SO_SET_REPLACE",
        (SOL_IP, ARPT_SO_SET_REPLACE, true) => "ARPT_SO_SET_REPLACE",
        (SOL_IP, EBT_SO_SET_ENTRIES, true) => "EBT_SO_SET_ENTRIES",
        (SOL_IP, EBT_SO_GET_ENTRIES | EBT_SO_GET_INIT_ENTRIES, false) => "EBT_SO_GET_ENTRIES",
        (SOL_RDS, _, _) => "an RDS option",
        (SOL_MPTCP, _, false) => "an MPTCP option",
        (SOL_SOCKET, SO_GET_FILTER, false) => "SO_GET_FILTER",
        (SOL_IP, IP_MSFILTER, false) => "IP_MSFILTER",
        (SOL_IP | SOL_IPV6, MCAST_MSFILTER, false) => "MCAST_MSFILTER",
        (SOL_TCP, TCP_AO_GET_KEYS, false) => "TCP_AO_GET_KEYS",
        (SOL_XDP, XDP_UMEM_REG, true) => "XDP_UMEM_REG",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_options_are_refused_and_plain_ones_pass() {
        assert!(takes_fprog(SOL_SOCKET, SO_ATTACH_FILTER));
        assert!(refused(SOL_SOCKET, SO_ATTACH_FILTER, true).is_none());
        assert!(refused(SOL_SOCKET, SO_ATTACH_BPF, true).is_some());
        assert!(refused(SOL_TCP, TCP_ZEROCOPY_RECEIVE, false).is_some());
        // SO_GET_FILTER (the same number, read) writes 8 bytes per unit of optlen.
        assert!(refused(SOL_SOCKET, SO_ATTACH_FILTER, false).is_some());
        assert!(refused(SOL_MPTCP, 4, false).is_some());
        assert!(refused(SOL_SOCKET, libc::SO_REUSEADDR, true).is_none());
        assert!(refused(SOL_TCP, libc::TCP_NODELAY, true).is_none());
        assert!(refused(SOL_IPV6, libc::IPV6_V6ONLY, true).is_none());
    }
}
