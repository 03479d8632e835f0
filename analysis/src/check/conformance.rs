//! The checker's conformance rules: capabilities a peer used without the
//! other advertising them (`capability.not-advertised`), and messages that
//! do not fit the official schema (`schema.*`, through [`super::schema`]).

use super::*;

impl Checker {
    /// `capability.not-advertised`: a method the other peer did not say it
    /// supports in initialize.
    pub(super) fn capability(&mut self, seq: i64, from_client: bool, method: &str) {
        let (init, needed) = if from_client {
            let Some((init, load)) = self.load_session else { return };
            match method {
                "session/load" if !load => (init, "agentCapabilities.loadSession"),
                _ => return,
            }
        } else {
            let Some((init, caps)) = self.client_caps else { return };
            let fs = caps.fs.unwrap_or_default();
            match method {
                "fs/read_text_file" if fs.read_text_file != Some(true) => (init, "clientCapabilities.fs.readTextFile"),
                "fs/write_text_file" if fs.write_text_file != Some(true) => {
                    (init, "clientCapabilities.fs.writeTextFile")
                }
                m if m.starts_with("terminal/") && caps.terminal != Some(true) => (init, "clientCapabilities.terminal"),
                _ => return,
            }
        };
        let message = format!(
            "{} called {}, but {} did not advertise {needed} in initialize (frame {init})",
            self.who(from_client),
            quote(method),
            self.who(!from_client)
        );
        self.find(Rule::CapabilityNotAdvertised, vec![init, seq], message);
    }

    pub(super) fn schema_request(&mut self, seq: i64, from_client: bool, method: &str, params: Option<&RawValue>) {
        if self.v2() {
            return;
        }
        if let Err(problem) = schema::request(from_client, method, params) {
            self.schema_problem(Rule::SchemaParams, vec![seq], from_client, "params", method, problem);
        }
    }

    pub(super) fn schema_notification(&mut self, seq: i64, from_client: bool, method: &str, params: Option<&RawValue>) {
        if self.v2() {
            return;
        }
        if let Err(problem) = schema::notification(from_client, method, params) {
            self.schema_problem(Rule::SchemaParams, vec![seq], from_client, "params", method, problem);
        }
    }

    pub(super) fn schema_problem(
        &mut self,
        rule: Rule,
        seqs: Vec<i64>,
        from_client: bool,
        part: &str,
        method: &str,
        problem: schema::Problem,
    ) {
        let (rule, message) = match problem {
            schema::Problem::Unknown => (
                Rule::UnknownMethod,
                format!("{} sent {}, a method the ACP schema does not have", self.who(from_client), quote(method)),
            ),
            schema::Problem::WrongDirection => (
                Rule::UnknownMethod,
                format!(
                    "{} sent {}, a method only {} may send",
                    self.who(from_client),
                    quote(method),
                    self.who(!from_client)
                ),
            ),
            schema::Problem::Invalid(said) => (
                rule,
                format!("the {part} of {} from {} do not fit the schema: {said}", quote(method), self.who(from_client)),
            ),
        };
        self.find(rule, seqs, message);
    }
}
