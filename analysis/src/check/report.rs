//! The checker's report: the findings so far, with every request still
//! unanswered counted as `rpc.unanswered`, and the counts per code.

use super::*;

impl Checker {
    /// The findings so far, with every request still unanswered: the
    /// checker goes on with the frames that follow (a live trace).
    pub fn report(&self, trace_id: i64) -> TraceFindings {
        self.report_of(trace_id, false)
    }

    /// [`Checker::report`] of a trace that is `live` (still being recorded
    /// or finishing): a request not answered yet is said to be so, not to
    /// be never answered.
    pub fn report_of(&self, trace_id: i64, live: bool) -> TraceFindings {
        let mut open: Vec<&Request> = self.in_flight.values().collect();
        open.sort_by_key(|r| r.seq);
        let mut findings = self.findings.clone();
        let mut counts_by_rule = self.counts;
        let mut left_out = self.left_out;
        for r in open {
            counts_by_rule[Rule::Unanswered.index()] += 1;
            if findings.len() >= MAX_FINDINGS {
                left_out += 1;
                continue;
            }
            let answer = if live {
                "has not answered yet (the trace is still being recorded)"
            } else {
                "never answered by the end of the trace"
            };
            let message = format!(
                "{} sent {} (id {}), which {} {answer}",
                self.who(r.from_client),
                quote(&r.method),
                r.id,
                self.who(!r.from_client)
            );
            let rule = Rule::Unanswered;
            findings.push(Finding {
                code: rule.code().to_owned(),
                severity: rule.severity(),
                seqs: vec![r.seq],
                message,
            });
        }
        findings.sort_by_key(|f| f.seq().unwrap_or(0));
        let mut counts = FindingCounts::default();
        let mut by_code = Vec::new();
        for (rule, &count) in Rule::ALL.iter().zip(&counts_by_rule) {
            if count > 0 {
                by_code.push(CodeCount { code: rule.code().to_owned(), severity: rule.severity(), count });
            }
            match rule.severity() {
                acp_tee_shared::check::Severity::Error => counts.errors += count,
                acp_tee_shared::check::Severity::Warning => counts.warnings += count,
                acp_tee_shared::check::Severity::Info => counts.infos += count,
            }
        }
        TraceFindings {
            trace_id,
            frames: self.frames,
            protocol_version: self.protocol_version,
            protocol: self.protocol.unwrap_or(acp_tee_shared::Protocol::Acp),
            counts,
            by_code,
            findings,
            left_out,
            conversation: self.conversation,
            live,
        }
    }
}
