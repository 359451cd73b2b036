//! The reference drivers' single-letter flags beyond the basic ones, and
//! what each mode makes of them.
//!
//! OpenAD's scripts and regression suite call every driver with the same
//! command-line conventions (`-v -V -i IN -c CATALOGUE -o OUT` plus an
//! example's flags), so `tangent`, `adjoint`, `trace` and `typechange`
//! accept the whole union of the reference drivers' flags, grouped as the
//! reference parses them (`-vV`, `-vVi IN`). A flag that means nothing in a
//! mode (`-P` in tangent mode, `-S` in trace mode) is accepted and reported
//! on standard error as having no effect there, so that a script never
//! breaks and a user never believes a flag did something it did not.

use clap::{Args, ValueEnum};
use xaif_model::Decoration;

/// Front-end decoration styles of `-F`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Style {
    /// Open64's `_N` and `__N` suffixes (default).
    #[value(name = "OPEN64_STYLE")]
    Open64Style,
    /// Names as written.
    #[value(name = "NO_STYLE")]
    NoStyle,
}

/// Formats of `-G`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GraphicsFormat {
    /// PostScript.
    Ps,
    /// Scalable vector graphics.
    Svg,
}

impl GraphicsFormat {
    /// The file extension and Graphviz output format.
    pub fn ext(self) -> &'static str {
        match self {
            GraphicsFormat::Ps => "ps",
            GraphicsFormat::Svg => "svg",
        }
    }
}

/// The reference drivers' flags that the transformation commands'
/// own flags (`flags.rs`) do not declare themselves.
#[derive(Args, Clone, Debug, Default)]
pub struct ReferenceFlags {
    /// Verbose XAIF: keep the alias and DU-UD maps, the `alias`, `du_ud`
    /// and `do_chain` keys and the side-effect lists in the output (the
    /// reference's `-V`; without it they are left out as the reference
    /// does).
    #[arg(short = 'V')]
    pub verbose_xaif: bool,
    /// Pessimistic assumptions for black-box routines (routines without a
    /// body): a call may also read and overwrite every global variable.
    #[arg(short = 'b')]
    pub pessimistic: bool,
    /// Front-end decoration style of names, for `-p`, `-w` and trace
    /// names: OPEN64_STYLE (default) or NO_STYLE.
    #[arg(short = 'F', value_enum)]
    pub style: Option<Style>,
    /// Routines without a body that have hand-written wrappers taking
    /// active arguments (space-separated names): their calls are renamed
    /// with the program's prefix and get no argument conversions.
    #[arg(short = 'w')]
    pub wrappers: Option<String>,
    /// Run-time counters: `countmult(n)` and `countadd(n)` calls with the
    /// block's multiplications and additions appended to each basic block.
    #[arg(short = 'C')]
    pub counters: bool,
    /// Debug graphics format (with -g 8): render every graph with
    /// Graphviz's `dot` into ps or svg files.
    #[arg(short = 'G', value_enum)]
    pub graphics: Option<GraphicsFormat>,
    /// Viewer program started on every rendered graph (with -G).
    #[arg(short = 'B')]
    pub viewer: Option<String>,
    /// Narrow debug output to records naming one of these tags
    /// (space-separated: a debug group `metrics`, `timing`, `graphics`, or
    /// a routine or graph name).
    #[arg(short = 'T')]
    pub tags: Option<String>,
    /// Every formal argument gets intent inout.
    #[arg(short = 'I')]
    pub all_inout: bool,
    /// Restore argument checkpoints in store order.
    #[arg(short = 'f')]
    pub restore_in_store_order: bool,
    /// Checkpoint formals even when every call site passes a constant.
    #[arg(short = 'P')]
    pub checkpoint_all_formals: bool,
    /// Simple-loop rule violations: ask, on standard input, whether to run
    /// each loop the front end marked simple backwards anyway.
    #[arg(short = 'u')]
    pub ask_simple_loops: bool,
    /// Simple-loop rule violations: ignore them, i.e. run every loop the
    /// front end marked simple backwards (the user vouches for it).
    #[arg(short = 'U')]
    pub ignore_simple_loops: bool,
    /// Top-level routine: globals that no routine it reaches writes are
    /// quasi-constant, and explicit loops need not restore them.
    #[arg(short = 't')]
    pub top: Option<String>,
    /// Print no warnings or notes (errors only).
    #[arg(long)]
    pub quiet: bool,
}

impl ReferenceFlags {
    /// The decoration style of `-F`.
    pub fn decoration(&self) -> Decoration {
        match self.style {
            Some(Style::NoStyle) => Decoration::Plain,
            _ => Decoration::Open64,
        }
    }

    /// The names of `-w`.
    pub fn wrapper_names(&self) -> Vec<String> {
        self.wrappers
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default()
    }
}

/// The four transformation drivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Tangent-linear (the reference's BasicBlockPreaccumulation driver).
    Tangent,
    /// Adjoint (BasicBlockPreaccumulationReverse).
    Adjoint,
    /// Tracing (TraceDiff).
    Trace,
    /// Argument conversions only (TypeChange).
    TypeChange,
}

impl Mode {
    /// The subcommand's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Tangent => "tangent",
            Mode::Adjoint => "adjoint",
            Mode::Trace => "trace",
            Mode::TypeChange => "typechange",
        }
    }
}
