//! The SIMD backend's thread pool: `n_threads - 1` workers plus the calling thread run each graph
//! node's rows in parallel.
//!
//! A decode graph has hundreds of small nodes, so waking threads through the OS for each one
//! would cost more than the work: while a graph is being computed (`Session`), workers spin on an
//! atomic phase counter (as ggml-cpu's threadpool does) and park between graphs.
//!
//! Spinning is bounded: after [`spin_budget`] without news a waiting thread (worker or caller)
//! sleeps on a condvar until the phase it waits for arrives. A phone runs more threads than fast
//! cores, and apps run whisper and llama at once: unbounded spinning there burns the very cores
//! the threads with work need (ggml users see 10-100x collapses). When the pool has more threads
//! than the process may run on, the budget is a few microseconds, so waiters yield their core
//! almost at once. Waking is Dekker-style: a sleeper announces itself (`sleepers`,
//! `caller_sleeping`, SeqCst) before re-checking under the lock, and a publisher bumps the
//! counter (SeqCst) before reading the announcement, so one of the two always sees the other.
//!
//! A job's `nth` slots (`f(ith, nth)` for each `ith`) are claimed, not owned: the caller runs slot
//! 0, and each thread takes the next unclaimed slot until none is left, so a worker the OS has not run
//! yet (a busy phone: another process on its core) leaves its slot to a thread that is running,
//! instead of holding the whole node until its next time slice. The caller then waits only for
//! slots already in progress. A slot is claimed with the phase in the same atomic word, so a
//! worker that wakes after its phase ended claims nothing of it.
//!
//! `GGML_RS_SIMD_AFFINITY=fast` (opt-in) keeps the workers on the fastest cores (see
//! [`super::affinity`]).

use parking_lot::{Condvar, Mutex};
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Job = dyn Fn(usize, usize) + Sync;

struct Shared {
    /// the job of the current phase; valid from the phase bump until `done` reaches nth
    job: UnsafeCell<Option<&'static Job>>,
    phase: AtomicUsize,
    /// the current phase (high 32 bits) and its next unclaimed slot (low 32 bits)
    claim: AtomicU64,
    /// slots of the current phase completed
    done: AtomicUsize,
    panicked: AtomicBool,
    active: AtomicBool,
    shutdown: AtomicBool,
    park: Mutex<()>,
    wake: Condvar,
    /// workers sleeping mid-session (past their spin budget)
    sleepers: AtomicUsize,
    /// the caller sleeps until `done` reaches its target, on `done_wake` under `park`
    caller_sleeping: AtomicBool,
    done_wake: Condvar,
    /// how long a waiting thread spins before it sleeps
    spin: Duration,
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
        Pool::build(n_threads, spin_budget(n_threads.max(1)))
    }

    /// A pool whose waiting threads spin for `spin` before they sleep.
    fn build(n_threads: usize, spin: Duration) -> Pool {
        let shared = Arc::new(Shared {
            job: UnsafeCell::new(None),
            phase: AtomicUsize::new(0),
            claim: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            active: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            park: Mutex::new(()),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            caller_sleeping: AtomicBool::new(false),
            done_wake: Condvar::new(),
            spin,
        });
        let n = n_threads.max(1);
        let cpus = super::affinity::worker_cpus(n);
        let workers = (1..n)
            .map(|ith| {
                let s = shared.clone();
                let cpus = cpus.clone();
                std::thread::Builder::new()
                    .name(format!("ggml-rs-simd-{}", ith))
                    .spawn(move || {
                        if let Some(cpus) = cpus {
                            super::affinity::pin_current_thread(&cpus);
                        }
                        worker(s, ith, n)
                    })
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
        // SAFETY: no worker reads `job` now: every slot of the previous phase completed, and a
        // slot is only claimed (and the job read) under the phase it belongs to.
        unsafe { *s.job.get() = Some(job) };
        s.done.store(0, Ordering::SeqCst);
        let phase = s.phase.load(Ordering::SeqCst).wrapping_add(1);
        // opens the new phase's slots (and publishes the job to whoever claims one); slot 0 is
        // the caller's, so a spinning worker is not beaten to the others by a caller done early
        s.claim.store(tag(phase) | 1, Ordering::SeqCst);
        s.phase.store(phase, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.park.lock();
            s.wake.notify_all();
        }
        let mut ok = catch_unwind(AssertUnwindSafe(|| f(0, nth))).is_ok();
        s.done.fetch_add(1, Ordering::SeqCst);
        // then whatever no worker has claimed yet (one the OS has not run leaves its slot here)
        ok &= run_slots(s, phase, nth, None);
        let waited = super::profile::enabled().then(std::time::Instant::now);
        let mut spin = Spin::new(s.spin);
        while s.done.load(Ordering::Acquire) < nth {
            if !spin.more() {
                s.caller_sleeping.store(true, Ordering::SeqCst);
                let mut g = s.park.lock();
                while s.done.load(Ordering::SeqCst) < nth {
                    s.done_wake.wait(&mut g);
                }
                s.caller_sleeping.store(false, Ordering::SeqCst);
            }
        }
        if let Some(t0) = waited {
            super::profile::record("(pool) calling thread waiting for the workers".to_string(), t0.elapsed());
        }
        // (cleared even when the caller's own slot panicked)
        let worker_panicked = s.panicked.swap(false, Ordering::SeqCst);
        ok && !worker_panicked
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let s = &self.pool.shared;
        s.active.store(false, Ordering::SeqCst);
        // workers asleep mid-session go back to the between-graphs wait (same condvar)
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.park.lock();
            s.wake.notify_all();
        }
    }
}

/// How long a waiting thread of a pool of `n_threads` spins before sleeping:
/// `GGML_RS_SIMD_SPIN_US` if set, else 200 us, or 5 us when the pool has more threads than the
/// process may run on at once (a spinning waiter there holds a core a thread with work needs).
pub fn spin_budget(n_threads: usize) -> Duration {
    static ENV: once_cell::sync::Lazy<Option<u64>> =
        once_cell::sync::Lazy::new(|| std::env::var("GGML_RS_SIMD_SPIN_US").ok().and_then(|v| v.trim().parse().ok()));
    let cores = cpu_count();
    Duration::from_micros(ENV.unwrap_or(if n_threads > cores { 5 } else { 200 }))
}

/// The CPUs this process may run on: its affinity mask on Linux / Android (what
/// `std::thread::available_parallelism` starts from, without the cgroup-quota parsing that adds
/// about 4 KiB to the phone library, where no quota applies), the standard answer elsewhere.
pub fn cpu_count() -> usize {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `set` is a zeroed cpu_set_t owned here; sched_getaffinity writes at most its size.
        let n = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
                libc::CPU_COUNT(&set) as usize
            } else {
                0
            }
        };
        n.max(1)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// The claim word of `phase` with no slot claimed yet.
fn tag(phase: usize) -> u64 {
    (phase as u64 & 0xffff_ffff) << 32
}

/// Claims and runs slots of `phase` until none is left; each finished slot counts in `done`. The
/// caller passes no `notify`: workers wake a sleeping caller when they finish a slot. `false` when
/// a slot panicked.
fn run_slots(s: &Shared, phase: usize, nth: usize, notify: Option<()>) -> bool {
    let mut ok = true;
    let mut c = s.claim.load(Ordering::Acquire);
    loop {
        if c & !0xffff_ffff != tag(phase) || (c & 0xffff_ffff) as usize >= nth {
            return ok;
        }
        match s.claim.compare_exchange_weak(c, c + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                let ith = (c & 0xffff_ffff) as usize;
                // SAFETY: the job was published before this phase's slots were opened, and stays
                // valid until every slot (this one included) reports done.
                let job = unsafe { *s.job.get() };
                if let Some(f) = job {
                    if catch_unwind(AssertUnwindSafe(|| f(ith, nth))).is_err() {
                        s.panicked.store(true, Ordering::SeqCst);
                        ok = false;
                    }
                }
                s.done.fetch_add(1, Ordering::SeqCst);
                if notify.is_some() && s.caller_sleeping.load(Ordering::SeqCst) {
                    let _g = s.park.lock();
                    s.done_wake.notify_all();
                }
                c = s.claim.load(Ordering::Acquire);
            }
            Err(now) => c = now,
        }
    }
}

/// A bounded spin: `more()` is true while the budget lasts (checking the clock every 64 calls).
struct Spin {
    start: Option<Instant>,
    budget: Duration,
    n: u32,
}

impl Spin {
    fn new(budget: Duration) -> Spin {
        Spin { start: None, budget, n: 0 }
    }

    fn more(&mut self) -> bool {
        self.n = self.n.wrapping_add(1);
        if self.n.is_multiple_of(64) {
            let t = *self.start.get_or_insert_with(Instant::now);
            if t.elapsed() >= self.budget {
                self.start = None;
                return false;
            }
        }
        std::hint::spin_loop();
        true
    }
}

fn worker(s: Arc<Shared>, _ith: usize, nth: usize) {
    // phases start at 0 when the pool is made; a worker that starts late still sees phase 1
    let mut seen = 0;
    loop {
        let mut spin = Spin::new(s.spin);
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
                if !spin.more() {
                    // past the budget mid-session: sleep until the next phase (or the session's end)
                    s.sleepers.fetch_add(1, Ordering::SeqCst);
                    let mut g = s.park.lock();
                    if s.active.load(Ordering::SeqCst) && s.phase.load(Ordering::SeqCst) == seen && !s.shutdown.load(Ordering::SeqCst) {
                        s.wake.wait(&mut g);
                    }
                    drop(g);
                    s.sleepers.fetch_sub(1, Ordering::SeqCst);
                }
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
        // slots, not this worker's own: whatever is left when it gets to run
        run_slots(&s, seen, nth, Some(()));
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

    /// Oversubscribed (more threads than cores, zero spin budget): every waiter sleeps at once,
    /// and every phase still completes with every item once (a lost wakeup would hang here).
    #[test]
    fn sleeping_waiters_never_miss_a_phase() {
        let pool = Pool::new(6);
        // no spinning at all: every wait goes to the condvar
        let zero = Pool::build(6, Duration::ZERO);
        for p in [&pool, &zero] {
            let counts: Vec<AtomicUsize> = (0..600).map(|_| AtomicUsize::new(0)).collect();
            for round in 0..5 {
                let s = p.session();
                for i in 0..200 {
                    assert!(s.run(&|ith, nth| {
                        let (a, b) = share(counts.len(), ith, nth);
                        for c in &counts[a..b] {
                            c.fetch_add(1, Ordering::Relaxed);
                        }
                        // uneven work, so some threads wait long and sleep
                        if (ith + i) % 7 == 0 {
                            std::thread::sleep(Duration::from_micros(50));
                        }
                    }));
                }
                drop(s);
                if round % 2 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1000));
        }
    }

    #[test]
    fn spin_budget_shrinks_when_oversubscribed() {
        let cores = cpu_count();
        // std's answer is the affinity mask capped by a cgroup quota
        assert!(cores >= std::thread::available_parallelism().map_or(1, |n| n.get()));
        if std::env::var("GGML_RS_SIMD_SPIN_US").is_err() {
            assert!(spin_budget(cores + 1) < spin_budget(cores));
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
