use clap::Parser;
use serde_json::json;
use vnetbench_probe::cli::{Cli, Cmd};
use vnetbench_probe::{barrier, client, paired, server, util};

fn main() {
    let cli = Cli::parse();
    let (mode, result) = match &cli.cmd {
        Cmd::Serve(a) => ("serve", serve(&a.bind, a.port)),
        Cmd::Rr(a) => ("rr", client::rr(a)),
        Cmd::Crr(a) => ("crr", client::crr(a)),
        Cmd::Stream(a) => ("stream", client::stream(a)),
        Cmd::Gaps(a) => ("gaps", client::gaps(a)),
        Cmd::Barrier(a) => ("barrier", barrier::barrier(a)),
        Cmd::Media(a) => ("media", client::media(a)),
        Cmd::Paired(a) => ("paired", paired_run(a)),
    };
    if let Err(message) = result {
        util::emit(&json!({"event": "error", "mode": mode, "t_ns": util::mono_ns(), "message": message}));
        std::process::exit(1);
    }
}

fn serve(bind: &str, port: u16) -> Result<(), String> {
    let s = server::Server::bind(bind, port).map_err(|e| format!("cannot listen on {bind}:{port}: {e}"))?;
    util::emit(&json!({"event": "listening", "mode": "serve", "t_ns": util::mono_ns(),
                       "bind": bind, "port": s.port()}));
    s.run().map_err(|e| e.to_string())
}

fn paired_run(a: &vnetbench_probe::cli::PairedArgs) -> Result<(), String> {
    let plan = paired::Plan {
        mode: a.mode.clone(),
        paths: paired::parse_paths(&a.paths)?,
        slice: a.slice,
        piece: a.piece,
        settle: a.settle,
        warm: a.warm,
        rounds: a.rounds,
        warmup_rounds: a.warmup_rounds,
        seed: a.seed,
        request: a.request,
        response: a.response,
        streams: a.streams,
        send_size: a.send_size,
        nodelay: a.nodelay,
        cpu: a.cpu,
        fifo: a.fifo,
    };
    paired::run(&plan)
}
