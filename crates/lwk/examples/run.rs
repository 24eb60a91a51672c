fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let mut cfg = multios_lwk::Config::new(&args[0], &rest);
    if std::env::var_os("LWK_EXIT").is_some() {
        cfg.backend = multios_lwk::Backend::Exit;
    }
    match multios_lwk::run(&cfg) {
        Ok(o) => {
            eprintln!(
                "status {:?} wall {:?} startup {:?} doorbells {} calls {}",
                o.status,
                o.wall,
                o.startup,
                o.doorbells,
                o.stats.calls()
            );
            std::process::exit(o.code());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
