//! The `*GGML_SCHED_DEBUG` printout (1 = splits, 2 = every node), at DEBUG level through the host
//! logger, in stock's format.

use super::Sched;
use crate::abi::vtable::cstr;
use crate::abi::*;
use crate::host::{log, op_desc, op_name};
use crate::tensor::{is_view_op, nbytes};

fn fmt_size(n: usize) -> String {
    if n >= 1024 * 1024 {
        format!("{}M", n / 1024 / 1024)
    } else {
        format!("{}K", n / 1024)
    }
}

impl<R: Rev> Sched<R> {
    fn name_of(&self, b: *mut Backend<R>) -> String {
        self.live.obj(b).and_then(|be| be.name().ok()).map(cstr).unwrap_or_else(|| "NULL".into())
    }

    pub(super) fn print_assignments(&self, g: &CGraph<R>) {
        let mut out = String::new();
        let mut cur_split = 0;
        for (i, &node) in g.nodes().iter().enumerate() {
            if cur_split < self.splits.len() && i == self.splits[cur_split].i_start {
                let sp = &self.splits[cur_split];
                out.push_str(&format!("\n## SPLIT #{}: {} # {} inputs", cur_split, self.name_of(self.members.backend(sp.backend_id)), sp.inputs.len()));
                for (j, &inp) in sp.inputs.iter().enumerate() {
                    let t = self.live.obj(inp).unwrap();
                    if j == 0 {
                        out.push_str(": ");
                    }
                    out.push_str(&format!("[{} ({:>5.5})] ", t.name(), fmt_size(nbytes(t).unwrap_or(0))));
                }
                out.push('\n');
                cur_split += 1;
            }
            let n = self.live.obj(node).unwrap();
            if is_view_op::<R>(n.op) || self.debug < 2 {
                continue;
            }
            let what = R::SCHED_DEBUG_NODE;
            out.push_str(&format!(
                "node #{:3} ({:>10.10}): {:>20.20} ({:>5.5}) [{:>5.5} {:>8.8}]",
                i,
                if what.op_desc { op_desc::<R>(n) } else { op_name::<R>(n.op) },
                n.name(),
                fmt_size(nbytes(n).unwrap_or(0)),
                self.name_of(self.tensor_backend(node)),
                ""
            ));
            if what.use_count {
                let uses = R::use_counts(g);
                let n_uses = match g.visited_hash_set.find(node) {
                    // SAFETY: use_counts has one entry per slot of the graph's visited set.
                    Some(slot) if !uses.is_null() => unsafe { *uses.add(slot) },
                    _ => 0,
                };
                out.push_str(&format!(" use={}", n_uses));
                if what.compute_flag {
                    out.push_str(&format!(",c={}", (n.flags & 16 != 0) as i32));
                }
            }
            out.push(':');
            for &src in n.src.iter() {
                let Some(s) = self.live.obj(src) else { continue };
                out.push_str(&format!(
                    " {:>20.20} ({:>5.5}) [{:>5.5} {:>8.8}]",
                    s.name(),
                    fmt_size(nbytes(s).unwrap_or(0)),
                    self.name_of(self.tensor_backend(src)),
                    ""
                ));
            }
            out.push('\n');
        }
        log::<R>(LogLevel::Debug, &out);
    }
}
