"""Kaldi's command-line conventions (util/parse-options.cc, base/kaldi-error.cc) for every tool.

Why not click: Kaldi's grammar is not click's. Options end at the first positional argument and
``--x`` may be followed by a positional that click would take as its value; booleans take
``--x``, ``--x=true`` and ``--x=f``; ``--config=FILE`` files and ``--print-args`` echo are built in;
usage errors exit 1 (click: 2) and fatal errors 255. Mirroring ParseOptions in ~200 lines is
smaller and more exact than bending click to it.

A tool looks like::

    tool = Tool("copy-vectors", USAGE)             # or Tool(name, USAGE, docs="docs/x.md#y")
    tool.register("binary", True, "Write in binary mode (only for plain-file output)")
    def run(opts, args): ...
    def main(argv=None): return tool.main(run, argv, num_args=2)
"""

import os
import sys
import traceback

from pauc_backend import __version__
from pauc_backend.errors import KaldiError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SHELL_OK_CHARS = set("[]~#^_-+=:.,/")


class UsageError(Exception):
    """Wrong command line: print the usage and exit 1."""


def format_float(value, precision=6):
    """C++ ostream default formatting (``%g`` with 6 significant digits), as in Kaldi's logs."""
    return "%.*g" % (precision, value)


def format_vector(values, precision=6):
    """A vector as Kaldi prints it inside a log message: `` [ 1 2 3 ]``."""
    return " [ " + "".join("%.*g " % (precision, v) for v in values) + "]"


def shell_quote(arg):
    """Quote one argument the way ParseOptions::Escape does when it echoes the command line."""
    if arg and all(c.isalnum() or c in _SHELL_OK_CHARS for c in arg):
        return arg
    if "'" in arg and not any(c in arg for c in '"`$\\'):
        return '"' + arg + '"'
    return "'" + arg.replace("'", "'\\''") + "'"


def _number(value):
    return format_float(value) if isinstance(value, float) else str(value)


def _bound(text):
    """``">=0"``, ``">0"``, ``"<=1"``, ``"<1"`` -> ("low"|"high", (bound, inclusive))."""
    for prefix, side, inclusive in ((">=", "low", True), (">", "low", False),
                                    ("<=", "high", True), ("<", "high", False)):
        if text.startswith(prefix):
            return side, (float(text[len(prefix):]) if "." in text or "e" in text
                          else int(text[len(prefix):]), inclusive)
    raise ValueError("bad bound %r (expected e.g. '>=0' or '<1')" % text)


def _parse_bool(text):
    lowered = text.lower()
    if lowered in ("true", "t", "1"):
        return True
    if lowered in ("false", "f", "0"):
        return False
    raise ValueError(text)


class _Option:
    def __init__(self, name, default, help_text, kind, choices=None, low=None, high=None):
        self.name = name
        self.default = default
        self.help = help_text
        self.kind = kind
        self.choices = tuple(choices) if choices is not None else None
        self.low = low      # (bound, inclusive) or None
        self.high = high

    def problem(self, value):
        """Why ``value`` is not allowed (a phrase for the ERROR line), or None."""
        if self.choices is not None:
            if value not in self.choices:
                return "must be one of %s" % ", ".join(map(str, self.choices))
            return None
        if self.kind not in (int, float):
            return None
        low_ok = self.low is None or value > self.low[0] or (value == self.low[0]
                                                                and self.low[1])
        high_ok = self.high is None or value < self.high[0] or (value == self.high[0]
                                                                  and self.high[1])
        if value != value or not (low_ok and high_ok):
            return "must be " + self._bounds_text()
        return None

    def _bounds_text(self):
        parts = []
        if self.low is not None:
            parts.append("%s %s" % (">=" if self.low[1] else ">", _number(self.low[0])))
        if self.high is not None:
            parts.append("%s %s" % ("<=" if self.high[1] else "<", _number(self.high[0])))
        return " and ".join(parts)

    def describe_allowed(self):
        if self.choices is not None:
            return "; one of: %s" % ", ".join(map(str, self.choices))
        bounds = self._bounds_text()
        return "; " + bounds if bounds else ""

    def convert(self, text):
        if self.kind is bool:
            return _parse_bool(text)
        if self.kind is int:
            return int(text)
        if self.kind is float:
            return float(text)
        return text

    def describe_default(self):
        if self.kind is bool:
            return "true" if self.default else "false"
        if self.kind is str:
            return '"%s"' % self.default
        return format_float(self.default) if self.kind is float else str(self.default)


class Options:
    """Parsed option values, as attributes with ``-`` replaced by ``_`` (``opts.num_utts``)."""

    def __init__(self, values):
        self.__dict__.update({k.replace("-", "_"): v for k, v in values.items()})

    def __repr__(self):
        return "Options(%r)" % self.__dict__


class Logger:
    """Kaldi log lines on stderr: ``LOG (tool[pauc-backend V]:func():cli/tool.py:42) message``."""

    def __init__(self, tool_name):
        self.tool_name = tool_name
        self.verbose = 0

    def _header(self, level, depth):
        frame = sys._getframe(depth + 1)
        return self.header_for(level, frame.f_code.co_name, frame.f_code.co_filename,
                               frame.f_lineno)

    def header_for(self, level, function, filename, lineno):
        path = os.path.abspath(filename)
        if path.startswith(_PACKAGE_DIR + os.sep):
            path = os.path.relpath(path, _PACKAGE_DIR)
        else:
            path = os.path.basename(path)
        return "%s (%s[pauc-backend %s]:%s():%s:%d)" % (
            level, self.tool_name, __version__, function, path, lineno)

    def _emit(self, line):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def log(self, message, depth=1):
        self._emit(self._header("LOG", depth) + " " + message)

    info = log

    def warning(self, message, depth=1):
        self._emit(self._header("WARNING", depth) + " " + message)

    def vlog(self, level, message, depth=1):
        """``VLOG[level]`` line, shown only when ``--verbose`` >= level."""
        if self.verbose >= level:
            self._emit(self._header("VLOG[%d]" % level, depth) + " " + message)


class Progress:
    """A one-line progress meter on stderr, shown only when stderr is a terminal."""

    def __init__(self, total, description, stream=None):
        self.total = total
        self.description = description
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()

    def update(self, count=1, extra=""):
        self.done += count
        if self.enabled:
            self.stream.write("\r%s: %d/%d %s\033[K" % (self.description, self.done,
                                                          self.total, extra))
            self.stream.flush()

    def close(self):
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()


MAX_DESCRIPTION_LINES = 8    # so that --help shows "Usage:" within its first 15 lines


def help_layout(name, usage, docs=None):
    """The usage text in Kaldi's shape (a binary's ``usage`` string in src/*bin/*.cc): a short
    description, then the ``Usage:`` line(s), an example and any short notes (the options
    follow). ``docs``: where the long explanation lives (a docs/ page, ``#anchor``), named on
    the description's last line. ValueError when the description runs past
    MAX_DESCRIPTION_LINES lines or there is no ``Usage:`` line: a longer text belongs in docs/,
    so that the usage is on a terminal's first screen."""
    lines = usage.strip("\n").splitlines()
    if not lines:                # a Tool without a usage text (a reference set of options)
        return ""
    at = next((i for i, line in enumerate(lines) if line.startswith("Usage:")), None)
    if at is None:
        raise ValueError("%s: the usage text has no line starting with 'Usage:'" % name)
    description = lines[:at]
    while description and not description[-1].strip():
        description.pop()
    if len(description) > MAX_DESCRIPTION_LINES:
        raise ValueError("%s: %d lines of description before 'Usage:', at most %d: move the "
                         "rest to docs/ and name the page (docs=)" % (
                             name, len(description), MAX_DESCRIPTION_LINES))
    if docs:
        description.append("More: %s" % docs)
    return "\n".join(description + [""] * bool(description) + lines[at:])


class Tool:
    """One command-line tool: its usage text, its options, and Kaldi's parse/log/exit behaviour.
    ``usage``: description, ``Usage:`` line(s), example (``help_layout``); ``docs``: the docs/
    page holding the long explanation."""

    def __init__(self, name, usage, docs=None):
        self.name = name
        self.usage = help_layout(name, usage, docs)
        self._options = {}
        self._aliases = {}
        self._checks = []
        self.log = Logger(name)

    def register(self, name, default, help_text, kind=None, choices=None, bounds=(),
                 aliases=()):
        """Register ``--name`` (``_`` or ``-``); its type comes from the default unless given.

        ``choices`` lists the allowed values; ``bounds`` are ``">=0"``, ``">0"``, ``"<=1"``,
        ``"<1"`` strings (e.g. ``(">0", "<1")`` for an open interval). A value outside them is
        one ERROR naming the option, exit 255, before the tool reads any input (checked in
        ``main`` right after parsing, with the checks added by ``check``). ``aliases``: older
        names of the option, still accepted (and named in --help).
        """
        key = name.lower().replace("_", "-")
        for alias in aliases:
            self._aliases[alias.lower().replace("_", "-")] = key
        if aliases:
            help_text += " (also --%s, its earlier name)" % ", --".join(aliases)
        kind = kind or type(default)
        if kind not in (bool, int, float, str):
            raise TypeError("unsupported option type %r" % kind)
        limits = dict(_bound(b) for b in bounds)
        option = _Option(name, default, help_text, kind, choices, limits.get("low"),
                         limits.get("high"))
        if option.problem(default) is not None and default != "":
            raise ValueError("default %r of --%s %s" % (default, name, option.problem(default)))
        self._options[key] = option

    def check(self, function):
        """Add a check of several options together, ``function(opts)``, run after parsing and
        before any input is read; it raises KaldiError (one ERROR, exit 255) or UsageError
        (usage, exit 1). Usable as a decorator."""
        self._checks.append(function)
        return function

    def validate(self, opts):
        """Every declared choice and range, then the ``check`` functions: KaldiError naming the
        first option whose value is not allowed."""
        for key, option in self._options.items():
            value = getattr(opts, key.replace("-", "_"))
            if option.kind is str and value == "" and option.default == "":
                continue  # an optional input left unset
            problem = option.problem(value)
            if problem is not None:
                raise KaldiError("Invalid value --%s=%s: %s" % (
                    option.name, _number(value) if option.kind is not str else value, problem))
        for function in self._checks:
            function(opts)

    # -- parsing -------------------------------------------------------------------------------
    def usage_text(self):
        lines = [self.usage]
        if self._options:  # no empty "Options:" header for a tool with only standard ones
            lines += ["", "Options:"]
            lines += [self._describe(self._options[key]) for key in sorted(self._options)]
        lines += ["", "Standard options:",
                  self._describe(_Option("config", "", "Configuration file to read (this "
                                         "option may be repeated)", str)),
                  self._describe(_Option("help", False, "Print out usage message", bool)),
                  self._describe(_Option("print-args", True, "Print the command line "
                                         "arguments (to stderr)", bool)),
                  self._describe(_Option("verbose", 0, "Verbose level (higher->more "
                                         "logging)", int)),
                  ""]
        return "\n".join(lines)

    @staticmethod
    def _describe(option):
        type_name = {bool: "bool", int: "int", float: "float", str: "string"}[option.kind]
        return "  --%-26s : %s (%s, default = %s%s)" % (
            option.name, option.help, type_name, option.describe_default(),
            option.describe_allowed())

    def parse(self, argv):
        """Return (Options, positionals, standard) for ``argv`` (without the program name)."""
        values = {k: o.default for k, o in self._options.items()}
        standard = {"help": False, "print-args": True, "verbose": 0}
        configs = []
        positionals = []
        command_line = []
        index = 0
        while index < len(argv):
            arg = argv[index]
            if arg == "--":
                index += 1
                break
            if not arg.startswith("--") or len(arg) == 2:
                break
            command_line.append(arg)
            index += 1
        positionals = list(argv[index:])
        # Config files first, then the command line, so the command line wins (as in Kaldi).
        for arg in command_line:
            key, value = self._split(arg)
            if key == "config":
                if value is None:
                    raise UsageError("Invalid option %s" % arg)
                configs.append(value)
        for config in configs:
            for arg in self._read_config(config):
                self._apply(arg, values, standard)
        for arg in command_line:
            self._apply(arg, values, standard)
        return Options(values), positionals, standard

    @staticmethod
    def _split(arg):
        body = arg[2:]
        if "=" in body:
            key, value = body.split("=", 1)
        else:
            key, value = body, None
        return key.lower().replace("_", "-"), value

    def _apply(self, arg, values, standard):
        key, value = self._split(arg)
        key = self._aliases.get(key, key)
        if key == "config":
            return
        if key in standard:
            kind = bool if key in ("help", "print-args") else int
            option = _Option(key, standard[key], "", kind)
            target = standard
        elif key in self._options:
            option = self._options[key]
            target = values
        else:
            raise UsageError("Invalid option %s" % arg)
        if value is None:
            if option.kind is not bool:
                raise UsageError("Invalid option %s (option requires a value)" % arg)
            target[key] = True
            return
        try:
            target[key] = option.convert(value)
        except ValueError:
            raise UsageError("Invalid option %s: cannot convert '%s' to %s" % (
                arg, value, option.kind.__name__)) from None

    @staticmethod
    def _read_config(path):
        try:
            with open(path, encoding="utf-8") as stream:
                lines = stream.read().splitlines()
        except OSError as err:
            raise KaldiError("Cannot open config file: %s (%s)" % (path, err.strerror)) from None
        options = []
        for number, line in enumerate(lines, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if not line.startswith("--"):
                raise KaldiError("Reading config file %s: line %d does not look like "
                                 "--option=value: %s" % (path, number, line))
            options.append(line)
        return options

    # -- running -------------------------------------------------------------------------------
    def main(self, run, argv=None, num_args=None, outputs=None):
        """Parse ``argv``, call ``run(opts, args)``, turn failures into ERROR lines; exit code.

        ``num_args`` is an int, a tuple of allowed counts, or None (``run`` checks itself and
        raises UsageError). ``outputs`` picks the positional outputs (an index or a slice of
        ``args``, or a function of ``args``: wspecifiers or wxfilenames) whose folders are
        checked, and which are locked to the end of the run, before ``run`` starts, so a
        missing output directory or another run writing an output is an ERROR before any
        input is read, not after the work. ``run`` returns an exit code (None means 0).
        """
        if argv is None:
            argv = sys.argv[1:]
        try:
            opts, args, standard = self.parse(argv)
        except UsageError as err:  # Kaldi: usage, then ERROR Invalid option, exit 255
            sys.stderr.write(self.usage_text() + "\n")
            self._error(str(err), err)
            return 255
        except KaldiError as err:
            self._error(str(err), err)
            return 255
        self.log.verbose = standard["verbose"]
        if standard["help"]:
            sys.stdout.write(self.usage_text() + "\n")
            return 0
        if standard["print-args"]:
            sys.stderr.write(" ".join([self.name] + [shell_quote(a) for a in argv]) + " \n")
            sys.stderr.flush()
        allowed = (num_args,) if isinstance(num_args, int) else num_args
        if allowed is not None and len(args) not in allowed:
            sys.stderr.write(self.usage_text() + "\n")
            late = [a for a in args if a.startswith("--") and len(a) > 2]
            if late:  # Kaldi takes them as positionals; say why the count is wrong
                sys.stderr.write("Note: options must come before the positional arguments "
                                 "(%s was taken as a positional argument)\n" % late[0])
            return 1
        stdout_lost = False
        try:
            self.validate(opts)
            from pauc_backend.kaldi_io.commit import output_group
            with output_group():   # every file the run writes is replaced together, or none
                if outputs is not None:   # checked, and locked to the end of the run
                    from pauc_backend.kaldi_io.outputs import check_outputs
                    picked = outputs(args) if callable(outputs) else args[outputs] if args else []
                    check_outputs([picked] if isinstance(picked, str) else picked)
                code = run(opts, args)
        except BrokenPipeError as err:  # SIGPIPE is ignored, so a vanished reader lands here
            self._error(_BROKEN_STDOUT, err)
            return 255
        except UsageError as err:
            sys.stderr.write(self.usage_text() + "\n")
            if str(err):
                self._error(str(err), None)
            return 1
        except (KaldiError, ValueError, OSError, MemoryError, EOFError) as err:
            self._error(_message_of(err), err)
            return 255
        except KeyboardInterrupt:
            return 130
        except Exception as err:  # a bug: still one ERROR line, the traceback only on request
            self._error("%s: %s (internal error; rerun with --verbose=1 for the traceback)"
                        % (type(err).__name__, err), err, always_trace=True)
            return 255
        finally:
            try:
                sys.stdout.flush()
            except (BrokenPipeError, OSError):
                stdout_lost = True
        if stdout_lost and not code:  # what the tool printed never arrived: not a success
            self._error(_BROKEN_STDOUT, None)
            return 255
        return 0 if code is None else code

    def _error(self, message, err, always_trace=False):
        if err is not None and err.__traceback__ is not None:
            frame = traceback.extract_tb(err.__traceback__)[-1]
            header = self.log.header_for("ERROR", frame.name, frame.filename, frame.lineno)
        else:
            header = self.log.header_for("ERROR", "main", __file__, 0)
        sys.stderr.write(header + " " + message + "\n")
        if err is not None and self.log.verbose >= 1 and always_trace:
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
        sys.stderr.flush()


_BROKEN_STDOUT = ("Failed to write standard output: its reader closed the pipe early (broken "
                  "pipe): the output is incomplete")


def _message_of(err):
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return "%s: %s" % (err.strerror, err.filename)
    if isinstance(err, MemoryError):
        return "Out of memory"
    return str(err) or type(err).__name__
