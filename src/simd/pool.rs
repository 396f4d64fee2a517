//! The SIMD backend's thread pool: `n_threads - 1` workers plus the calling thread run each graph
//! node's rows in parallel.
//!
//! A decode graph has hundreds of small nodes, so waking threads through the OS for each one
//! would cost more than the work: while a graph is being computed (`Session`), workers spin on an
//! atomic phase counter (as ggml-cpu's threadpool does) and only park between graphs.

use parking_lot::{Condvar, Mutex};
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

type Job = dyn Fn(usize, usize) + Sync;

struct Shared {
    /// the job of the current phase; valid from the phase bump until `done` reaches n_workers
    job: UnsafeCell<Option<&'static Job>>,
    phase: AtomicUsize,
    done: AtomicUsize,
    panicked: AtomicBool,
    active: AtomicBool,
    shutdown: AtomicBool,
    park: Mutex<()>,
    wake: Condvar,
}

// SAFETY: `job` is written only by the pool's owner while no worker reads it (before the phase
// bump, after all workers reported done); everything else is atomics or locks.
unsafe impl Sync for Shared {}
// SAFETY: as above.
unsafe impl Send for Shared {}

pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    pub fn new(n_threads: usize) -> Pool {
        let shared = Arc::new(Shared {
            job: UnsafeCell::new(None),
            phase: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            active: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            park: Mutex::new(()),
            wake: Condvar::new(),
        });
        let n = n_threads.max(1);
        let workers = (1..n)
            .map(|ith| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("ggml-rs-simd-{}", ith))
                    .spawn(move || worker(s, ith, n))
                    .expect("spawn a SIMD worker thread")
            })
            .collect();
        Pool { shared, workers }
    }

    pub fn n_threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Keeps the workers spinning for the duration of one graph.
    pub fn session(&self) -> Session<'_> {
        self.shared.active.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.park.lock();
            self.shared.wake.notify_all();
        }
        Session { pool: self }
    }
}

pub struct Session<'a> {
    pool: &'a Pool,
}

impl Session<'_> {
    pub fn n_threads(&self) -> usize {
        self.pool.n_threads()
    }

    /// Runs `f(ith, nth)` on every thread and returns when all are done; `false` if one panicked.
    pub fn run(&self, f: &(dyn Fn(usize, usize) + Sync)) -> bool {
        let s = &self.pool.shared;
        let nth = self.pool.n_threads();
        if nth == 1 {
            return catch_unwind(AssertUnwindSafe(|| f(0, 1))).is_ok();
        }
        // SAFETY: the reference is only used by workers until they all report done below, which
        // happens before this function returns, so the erased lifetime never outlives `f`.
        let job: &'static Job = unsafe { std::mem::transmute::<&(dyn Fn(usize, usize) + Sync), &'static Job>(f) };
        // SAFETY: no worker reads `job` now: the previous phase completed (done == nth - 1).
        unsafe { *s.job.get() = Some(job) };
        s.done.store(0, Ordering::SeqCst);
        s.phase.fetch_add(1, Ordering::SeqCst);
        let ok = catch_unwind(AssertUnwindSafe(|| f(0, nth))).is_ok();
        let waited = super::profile::enabled().then(std::time::Instant::now);
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) < nth - 1 {
            spin(&mut spins);
        }
        if let Some(t0) = waited {
            super::profile::record("(pool) calling thread waiting for the workers".to_string(), t0.elapsed());
        }
        ok && !s.panicked.swap(false, Ordering::SeqCst)
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.pool.shared.active.store(false, Ordering::SeqCst);
    }
}

fn spin(spins: &mut u32) {
    *spins += 1;
    if *spins < 50_000 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

fn worker(s: Arc<Shared>, ith: usize, nth: usize) {
    // phases start at 0 when the pool is made; a worker that starts late still sees phase 1
    let mut seen = 0;
    loop {
        let mut spins = 0u32;
        loop {
            if s.shutdown.load(Ordering::Acquire) {
                return;
            }
            let p = s.phase.load(Ordering::Acquire);
            if p != seen {
                seen = p;
                break;
            }
            if s.active.load(Ordering::Acquire) {
                spin(&mut spins);
            } else {
                let mut g = s.park.lock();
                // Checked under the lock that `session` and `drop` take to notify, so no wakeup
                // is lost and an idle worker sleeps until the next graph (it used to wake every
                // 100 ms: two idle worker sets, one per host, kept a phone's cores busy).
                if !s.active.load(Ordering::Acquire) && s.phase.load(Ordering::Acquire) == seen && !s.shutdown.load(Ordering::Acquire) {
                    s.wake.wait(&mut g);
                }
            }
        }
        // SAFETY: the job was published before the phase bump we just observed and stays valid
        // until we report done.
        let job = unsafe { *s.job.get() };
        if let Some(f) = job {
            if catch_unwind(AssertUnwindSafe(|| f(ith, nth))).is_err() {
                s.panicked.store(true, Ordering::SeqCst);
            }
        }
        s.done.fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.park.lock();
            self.shared.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// The `[start, end)` share of `n` items for thread `ith` of `nth`.
pub fn share(n: usize, ith: usize, nth: usize) -> (usize, usize) {
    let per = n.div_ceil(nth.max(1));
    let start = (per * ith).min(n);
    (start, (start + per).min(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_over_many_phases() {
        for n_threads in [1, 2, 3] {
            let pool = Pool::new(n_threads);
            let counts: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
            {
                let s = pool.session();
                for _ in 0..200 {
                    assert!(s.run(&|ith, nth| {
                        let (a, b) = share(counts.len(), ith, nth);
                        for c in &counts[a..b] {
                            c.fetch_add(1, Ordering::Relaxed);
                        }
                    }));
                }
            }
            assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 200));
        }
    }

    /// Workers park with no timeout between graphs: each new session must wake them (a lost
    /// wakeup would hang here, as the parked worker never sees the phase of the job).
    #[test]
    fn parked_workers_wake_for_every_new_session() {
        let pool = Pool::new(3);
        for round in 0..20 {
            let hits = AtomicUsize::new(0);
            {
                let s = pool.session();
                assert!(s.run(&|_, _| {
                    hits.fetch_add(1, Ordering::Relaxed);
                }));
            }
            assert_eq!(hits.load(Ordering::Relaxed), 3);
            // let the workers reach the condvar before the next session
            std::thread::sleep(std::time::Duration::from_millis(if round % 2 == 0 { 5 } else { 0 }));
        }
    }

    #[test]
    fn a_panicking_job_is_reported_and_the_pool_survives() {
        let pool = Pool::new(2);
        let s = pool.session();
        assert!(!s.run(&|ith, _| if ith == 1 { panic!("boom") }));
        let hits = AtomicUsize::new(0);
        assert!(s.run(&|_, _| {
            hits.fetch_add(1, Ordering::Relaxed);
        }));
        assert_eq!(hits.load(Ordering::Relaxed), 2);
    }
}
