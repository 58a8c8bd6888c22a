//! tun device: create or attach (TUNSETIFF with IFF_TUN | IFF_NO_PI, not
//! persistent, so it disappears with the process) and set the MTU.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::FromRawFd;
use std::os::unix::io::AsRawFd;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    /// Union in C: flags (short) or mtu (int); 24 bytes total.
    data: [u8; 24],
}

fn ifreq(name: &str) -> io::Result<IfReq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"));
    }
    let mut r = IfReq { name: [0; libc::IFNAMSIZ], data: [0; 24] };
    r.name[..name.len()].copy_from_slice(name.as_bytes());
    Ok(r)
}

/// Open /dev/net/tun and attach to (creating if needed) tun `name`.
pub fn open_tun(name: &str) -> io::Result<File> {
    let f = OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    let mut r = ifreq(name)?;
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as i16;
    r.data[..2].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: ioctl with a properly sized ifreq.
    if unsafe { libc::ioctl(f.as_raw_fd(), TUNSETIFF as _, &mut r) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(f)
}

/// Set the MTU of interface `name` (SIOCSIFMTU on a throwaway socket).
pub fn set_mtu(name: &str, mtu: u32) -> io::Result<()> {
    let mut r = ifreq(name)?;
    r.data[..4].copy_from_slice(&(mtu as i32).to_ne_bytes());
    // SAFETY: socket + ioctl with checked results; socket closed by File drop.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let _guard = File::from_raw_fd(s);
        if libc::ioctl(s, libc::SIOCSIFMTU as _, &mut r) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
