//! Command line (clap derive).

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "vnetbench-probe",
    version,
    about = "Network measurement probe: rr, crr, stream, gaps, barrier, media. Output: JSON lines."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Serve every mode on one TCP port and the same UDP port number.
    Serve(ServeArgs),
    /// Request/response transactions (netperf TCP_RR / UDP_RR).
    Rr(RrArgs),
    /// Connect, request, response, close per transaction (netperf TCP_CRR).
    Crr(CrrArgs),
    /// Bulk transfer client -> server (iperf3 / netperf TCP_STREAM).
    ///
    /// TCP data connections keep Nagle's algorithm on, as iperf3 and netperf do; --nodelay
    /// sets TCP_NODELAY on them. The control connection always has TCP_NODELAY.
    Stream(StreamArgs),
    /// Constant-rate UDP messages; send and receive gap distributions.
    Gaps(GapsArgs),
    /// Dissemination barrier among N ranks.
    Barrier(BarrierArgs),
    /// K constant-bitrate UDP streams server -> client; RFC 3550 jitter, bitrate, loss.
    Media(MediaArgs),
    /// Several paths measured in alternation: short slices, a fresh random order each round.
    Paired(PairedArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to bind.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind: String,
    /// TCP port and UDP port number.
    #[arg(long, default_value_t = 7000)]
    pub port: u16,
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Server address HOST:PORT (every connection and datagram goes there).
    #[arg(long)]
    pub server: String,
    /// Measured duration in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Seconds between interval events.
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
}

#[derive(Args, Debug, Clone)]
pub struct RrArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value_t = Protocol::Tcp)]
    pub protocol: Protocol,
    /// Request size in bytes (UDP: at least 32).
    #[arg(long, default_value_t = 100)]
    pub request: u32,
    /// Response size in bytes (UDP: at least 32).
    #[arg(long, default_value_t = 200)]
    pub response: u32,
    /// Transactions in flight (closed loop, on each flow).
    #[arg(long, default_value_t = 1)]
    pub burst: u32,
    /// Unmeasured seconds before the measurement.
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// TCP connections (flows) the transactions run over, each closed loop on its own
    /// thread or, with --rate, sharing the open loop's arrivals in turn.
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Open loop: requests a second in all, each sent at its arrival time whether or not
    /// earlier replies came back; latency from the arrival time (TCP only; 0: closed loop).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Open loop: the arrival process.
    #[arg(long, value_enum, default_value_t = Arrivals::Poisson)]
    pub arrivals: Arrivals,
    /// Open loop: seed of the arrival times.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Open loop: how the client waits, for each send time and for the replies: `block`
    /// (sleep to the send time, a reader thread per flow blocked on its socket) or `spin`
    /// (one thread that busy-polls every flow between send times, one CPU kept busy, as
    /// sockperf's fixed-rate mode waits: no idle CPU's wake-up inside the latency).
    #[arg(long, value_enum, default_value_t = Wait::Block)]
    pub wait: Wait,
}

/// How an open loop's client waits (see `RrArgs::wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Wait {
    Block,
    Spin,
}

impl Wait {
    pub fn as_str(self) -> &'static str {
        match self {
            Wait::Block => "block",
            Wait::Spin => "spin",
        }
    }
}

/// How open-loop requests arrive: exponential gaps (Poisson) or evenly spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Arrivals {
    Poisson,
    Constant,
}

impl Arrivals {
    pub fn as_str(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Constant => "constant",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct CrrArgs {
    #[command(flatten)]
    pub common: Common,
    /// Request size in bytes (at least 12: the header).
    #[arg(long, default_value_t = 100)]
    pub request: u32,
    #[arg(long, default_value_t = 200)]
    pub response: u32,
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
}

#[derive(Args, Debug, Clone)]
pub struct StreamArgs {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value_t = Protocol::Tcp)]
    pub protocol: Protocol,
    /// Parallel streams.
    #[arg(long, default_value_t = 1)]
    pub streams: u32,
    /// Bytes per send call (default: 131072 for TCP, 1472 for UDP).
    #[arg(long)]
    pub send_size: Option<usize>,
    /// UDP only: total offered bit rate, e.g. 500mbit (default: as fast as possible).
    #[arg(long)]
    pub bitrate: Option<String>,
    /// TCP only: set TCP_NODELAY on the data connections (default: Nagle on, as iperf3 -N /
    /// netperf -D are off by default).
    #[arg(long)]
    pub nodelay: bool,
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
}

#[derive(Args, Debug, Clone)]
pub struct GapsArgs {
    #[command(flatten)]
    pub common: Common,
    /// Messages per second.
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Message size in bytes (at least 32).
    #[arg(long, default_value_t = 64)]
    pub size: u32,
}

#[derive(Args, Debug, Clone)]
pub struct MediaArgs {
    #[command(flatten)]
    pub common: Common,
    /// Concurrent streams.
    #[arg(long, default_value_t = 4)]
    pub streams: u32,
    /// Bit rate of each stream, e.g. 2mbit.
    #[arg(long, default_value = "2mbit")]
    pub bitrate: String,
    /// UDP payload bytes per packet (at least 32).
    #[arg(long, default_value_t = 1316)]
    pub packet_size: u32,
}

#[derive(Args, Debug, Clone)]
pub struct BarrierArgs {
    /// This process's rank (index into --peers).
    #[arg(long)]
    pub rank: usize,
    /// Every rank's HOST:PORT as this rank reaches it, comma-separated, in rank order.
    #[arg(long, value_delimiter = ',', required = true)]
    pub peers: Vec<String>,
    /// Number of barriers (default 1000 unless --duration is given).
    #[arg(long, conflicts_with = "duration")]
    pub rounds: Option<u64>,
    /// Seconds to keep synchronising (rank 0 decides when to stop).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Address to listen on (default 0.0.0.0:<port of own entry in --peers>).
    #[arg(long)]
    pub listen: Option<String>,
    /// Seconds to wait for all peers to connect.
    #[arg(long, default_value_t = 30.0)]
    pub connect_timeout: f64,
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
}

#[derive(Args, Debug, Clone)]
pub struct PairedArgs {
    /// What each slice measures: rr, crr or stream (TCP).
    #[arg(long)]
    pub mode: String,
    /// The paths, a JSON list: [{"name", "netns" (file, empty: own), "server" HOST:PORT,
    /// "cpu_files" [cgroup CPU counters read around each slice]}, ...].
    #[arg(long)]
    pub paths: String,
    /// Seconds each slice lasts: what a path is measured for in one round.
    #[arg(long, default_value_t = 0.1)]
    pub slice: f64,
    /// Seconds of one visit to a path (0: the whole slice). A round is then several cycles
    /// over every path, each in a fresh random order, and each path's slice is the sum of
    /// its pieces: a path and its baseline interleave at this grain within the round.
    #[arg(long, default_value_t = 0.0)]
    pub piece: f64,
    /// Seconds at the start of each slice (of each piece) run but not recorded.
    #[arg(long, default_value_t = 0.0)]
    pub settle: f64,
    /// rr/crr: transactions at the start of each visit (piece) run but not recorded: a path's
    /// first round trips after its idle time wake its server and daemons.
    #[arg(long, default_value_t = 0)]
    pub warm: u32,
    /// Measured rounds (one slice per path each).
    #[arg(long, default_value_t = 10)]
    pub rounds: u32,
    /// Rounds run first and not reported.
    #[arg(long, default_value_t = 1)]
    pub warmup_rounds: u32,
    /// Seed of the order of the paths in each round.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 100)]
    pub request: u32,
    #[arg(long, default_value_t = 200)]
    pub response: u32,
    /// stream: data connections per path.
    #[arg(long, default_value_t = 1)]
    pub streams: u32,
    /// stream: bytes per send call.
    #[arg(long, default_value_t = 131072)]
    pub send_size: usize,
    /// stream: TCP_NODELAY on the data connections.
    #[arg(long)]
    pub nodelay: bool,
    /// Pin this process to one CPU (the same for every path).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Run under SCHED_FIFO at this priority (1-99), so ordinary processes cannot delay it.
    #[arg(long)]
    pub fifo: Option<i32>,
}
