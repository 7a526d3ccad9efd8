//! The signals a service manager sends `serve`, listened for from its first instant: SIGTERM
//! and SIGINT stop it in order, SIGHUP reads the TLS certificate again. A signal that came
//! before its listener existed would take its default action, and SIGHUP's ends the process,
//! which systemd counts as a clean exit and does not restart: a certificate renewal hook's
//! `systemctl reload` during a start would leave the shop down.

use std::future::Future;

use actix_web::rt::signal::unix::{Signal, SignalKind, signal};

/// The listeners of `serve`'s signals, made before anything else of it runs (`main.rs`).
#[derive(Debug)]
pub struct Signals {
    terminate: std::io::Result<Signal>,
    interrupt: std::io::Result<Signal>,
    hangup: std::io::Result<Signal>,
}

impl Signals {
    /// Listens from this call on: a signal that arrives before its task waits for it is kept
    /// for it. Needs the runtime, so it is the first thing the runtime runs.
    pub fn listen() -> Self {
        Self {
            terminate: signal(SignalKind::terminate()),
            interrupt: signal(SignalKind::interrupt()),
            hangup: signal(SignalKind::hangup()),
        }
    }

    /// What resolves at the first SIGTERM or SIGINT, and the SIGHUPs (`None` if they cannot
    /// be listened for: said in the log).
    pub(crate) fn split(self) -> (impl Future<Output = ()>, Option<Signal>) {
        let hangups = self
            .hangup
            .map_err(|error| {
                tracing::warn!(%error, "cannot listen for SIGHUP: the TLS certificate is read at start only");
            })
            .ok();
        let stop = async move {
            match (self.terminate, self.interrupt) {
                (Ok(mut terminate), Ok(mut interrupt)) => {
                    let terminated = Box::pin(async move { terminate.recv().await });
                    let interrupted = Box::pin(async move { interrupt.recv().await });
                    futures_util::future::select(interrupted, terminated).await;
                }
                (Err(error), _) | (_, Err(error)) => {
                    tracing::warn!(%error, "cannot listen for SIGTERM or SIGINT; stopping on Ctrl-C only");
                    let _ = actix_web::rt::signal::ctrl_c().await;
                }
            }
        };
        (stop, hangups)
    }
}
