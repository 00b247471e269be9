//! Names the pass gives to what it adds to a module, in one place: every mode marks its work with them, and a
//! later run of the pass (an LTO link that loads the plugin again) recognises that work by them. Symbol names,
//! shared with the runtime, are in [`pathprof_format::symbols`].

/// Marks a module (named metadata) and each function (a string attribute) as instrumented: a second run of
/// the pass in the same pipeline leaves them alone.
pub const INSTRUMENTED_MARK: &str = "pathprof.instrumented";

/// The prefix of every symbol the pass and the runtime define (all named in [`pathprof_format::symbols`]):
/// functions so named are ours and never instrumented.
pub const OWN_SYMBOL_PREFIX: &str = pathprof_format::symbols::PREFIX;
