//! `berth kubeconfig --user alice --group dev`: a kubeconfig for a new user, with a client
//! certificate signed by the CA in the data directory (CN = the user, O = each group). What
//! the user may do is then up to RBAC: bind them (or their groups) to a Role.

use anyhow::Context;
use berth_apiserver::tls;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct KubeconfigArgs {
    /// The user's name (the certificate's CN).
    #[arg(long)]
    pub user: String,
    /// A group the user is in (the certificate's O); repeat for several.
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// The data directory of `berth serve` (its CA signs the certificate).
    #[arg(long, default_value = "./berth-data")]
    pub data_dir: PathBuf,
    /// The API server's URL; by default the one of the data directory's admin kubeconfig.
    #[arg(long)]
    pub server: Option<String>,
    /// Where to write the kubeconfig (created readable by its owner only); `-` for stdout.
    #[arg(short = 'o', long, default_value = "-")]
    pub output: PathBuf,
}

/// The `server:` of the admin kubeconfig `berth serve` wrote.
fn admin_server(data_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = data_dir.join("kubeconfig");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (has berth serve run with this --data-dir?)",
            path.display()
        )
    })?;
    text.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("server:")
                .map(|s| s.trim().to_string())
        })
        .with_context(|| format!("{} names no server", path.display()))
}

pub fn run(args: KubeconfigArgs) -> anyhow::Result<()> {
    anyhow::ensure!(!args.user.is_empty(), "--user must not be empty");
    anyhow::ensure!(
        args.data_dir.join("ca.crt").exists(),
        "{} has no ca.crt: run `berth serve --data-dir {}` first",
        args.data_dir.display(),
        args.data_dir.display()
    );
    let creds = tls::load_or_create(&args.data_dir, &[])?;
    let server = match args.server {
        Some(s) => s,
        None => admin_server(&args.data_dir)?,
    };
    let (cert, key) = tls::issue_client_certificate(&creds, &args.user, &args.groups)?;
    let kubeconfig = tls::user_kubeconfig(&server, &creds, &args.user, &cert, &key);
    if args.output.as_os_str() == "-" {
        print!("{kubeconfig}");
    } else {
        tls::write_private(&args.output, &kubeconfig)?;
        eprintln!(
            "wrote {} for user {:?} (groups {:?})",
            args.output.display(),
            args.user,
            args.groups
        );
    }
    Ok(())
}
