//! The service IP range and the node port range: parsing their flags and picking a free value.
//! Pure: what is in use and where to start looking are passed in.

use std::collections::HashSet;
use std::net::Ipv4Addr;

/// `--service-cluster-ip-range`: an IPv4 CIDR. Its network and broadcast addresses are never
/// handed out, as upstream's allocator leaves them; the first usable address is the
/// `kubernetes` Service's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    network: u32,
    prefix: u8,
}

impl IpRange {
    /// Parses `a.b.c.d/n`; the address is masked to its network (upstream accepts a host
    /// address with a prefix and uses its network). Prefixes longer than /30 leave no room.
    pub fn parse(cidr: &str) -> Result<IpRange, String> {
        let bad =
            || format!("invalid service CIDR {cidr:?}: want an IPv4 network like 10.96.0.0/12");
        let (ip, prefix) = cidr.trim().split_once('/').ok_or_else(bad)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        if !(8..=30).contains(&prefix) {
            return Err(format!(
                "invalid service CIDR {cidr:?}: the prefix must be between /8 and /30"
            ));
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(IpRange {
            network: u32::from(ip) & mask,
            prefix,
        })
    }

    fn size(&self) -> u32 {
        1u32 << (32 - self.prefix)
    }

    /// Whether `ip` may be allocated: in the network, not its network or broadcast address.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        ip > self.network && ip - self.network < self.size() - 1
    }

    /// The first usable address (the `kubernetes` Service's ClusterIP).
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    /// A free address, looking from the `start`-th usable one onwards and wrapping around;
    /// `None` when every address is in use.
    pub fn pick(&self, used: &HashSet<Ipv4Addr>, start: u32) -> Option<Ipv4Addr> {
        let usable = self.size() - 2;
        (0..usable)
            .map(|i| Ipv4Addr::from(self.network + 1 + (start.wrapping_add(i) % usable)))
            .find(|ip| !used.contains(ip))
    }
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

/// `--service-node-port-range`: `min-max` inclusive (upstream also accepts `min+count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    min: u16,
    max: u16,
}

impl PortRange {
    pub fn parse(range: &str) -> Result<PortRange, String> {
        let bad = || format!("invalid port range {range:?}: want min-max, like 30000-32767");
        let range = range.trim();
        let (min, max) = if let Some((a, b)) = range.split_once('-') {
            let min: u16 = a.trim().parse().map_err(|_| bad())?;
            (min, b.trim().parse::<u16>().map_err(|_| bad())?)
        } else if let Some((a, b)) = range.split_once('+') {
            let min: u16 = a.trim().parse().map_err(|_| bad())?;
            let count: u16 = b.trim().parse().map_err(|_| bad())?;
            (min, min.checked_add(count).ok_or_else(bad)?)
        } else {
            return Err(bad());
        };
        if min == 0 || min > max {
            return Err(bad());
        }
        Ok(PortRange { min, max })
    }

    pub fn contains(&self, port: i64) -> bool {
        port >= i64::from(self.min) && port <= i64::from(self.max)
    }

    /// A free port from the `start`-th onwards, wrapping around; `None` when all are in use.
    pub fn pick(&self, used: &HashSet<u16>, start: u32) -> Option<u16> {
        let count = u32::from(self.max - self.min) + 1;
        (0..count)
            .map(|i| self.min + (start.wrapping_add(i) % count) as u16)
            .find(|p| !used.contains(p))
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_range_as_kubeadm_sets_it() {
        let r = IpRange::parse("10.96.0.0/12").unwrap();
        assert_eq!(r.to_string(), "10.96.0.0/12");
        assert_eq!(r.first(), Ipv4Addr::new(10, 96, 0, 1));
        assert!(r.contains(Ipv4Addr::new(10, 111, 255, 254)));
        assert!(!r.contains(Ipv4Addr::new(10, 111, 255, 255)), "broadcast");
        assert!(!r.contains(Ipv4Addr::new(10, 96, 0, 0)), "network");
        assert!(!r.contains(Ipv4Addr::new(10, 112, 0, 1)));
    }

    #[test]
    fn a_host_address_is_masked_to_its_network() {
        assert_eq!(
            IpRange::parse("10.0.0.77/24").unwrap().to_string(),
            "10.0.0.0/24"
        );
    }

    #[test]
    fn bad_ranges_are_refused() {
        for bad in [
            "",
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/31",
            "x/24",
            "::1/64",
            "10.0.0.0/4",
        ] {
            assert!(IpRange::parse(bad).is_err(), "{bad}");
        }
        for bad in ["", "30000", "3-2", "0-10", "a-b", "30000-70000", "65535+1"] {
            assert!(PortRange::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn picking_skips_what_is_used_and_wraps() {
        let r = IpRange::parse("10.0.0.0/30").unwrap();
        let mut used = HashSet::new();
        assert_eq!(r.pick(&used, 1), Some(Ipv4Addr::new(10, 0, 0, 2)));
        used.insert(Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(r.pick(&used, 1), Some(Ipv4Addr::new(10, 0, 0, 1)));
        used.insert(Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(r.pick(&used, 1), None, "the range is full");
        let ports = PortRange::parse("30000-30001").unwrap();
        assert_eq!(ports.pick(&HashSet::from([30000]), 0), Some(30001));
        assert_eq!(ports.pick(&HashSet::from([30000, 30001]), 7), None);
        assert_eq!(
            PortRange::parse("30000+767").unwrap().to_string(),
            "30000-30767"
        );
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in ".{0,24}") {
            let _ = IpRange::parse(&s);
            let _ = PortRange::parse(&s);
        }

        #[test]
        fn a_picked_address_is_in_range_and_free(
            a in any::<u32>(), prefix in 8u8..=30, start in any::<u32>(),
            used in proptest::collection::vec(any::<u32>(), 0..16),
        ) {
            let r = IpRange::parse(&format!("{}/{prefix}", Ipv4Addr::from(a))).unwrap();
            let used: HashSet<Ipv4Addr> = used.into_iter().map(Ipv4Addr::from).collect();
            if let Some(ip) = r.pick(&used, start) {
                prop_assert!(r.contains(ip));
                prop_assert!(!used.contains(&ip));
            }
        }

        #[test]
        fn a_picked_port_is_in_range_and_free(
            min in 1u16..60000, len in 0u16..500, start in any::<u32>(),
            used in proptest::collection::hash_set(any::<u16>(), 0..64),
        ) {
            let r = PortRange::parse(&format!("{min}-{}", min + len)).unwrap();
            match r.pick(&used, start) {
                Some(p) => {
                    prop_assert!(r.contains(i64::from(p)));
                    prop_assert!(!used.contains(&p));
                }
                None => prop_assert!((min..=min + len).all(|p| used.contains(&p))),
            }
        }
    }
}
