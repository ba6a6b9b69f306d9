"""Which programs a command runs, and whether each exists in the target image.

The target is mini-swe-agent's SWE-bench environment: a Linux + Python development image with the
task's repository installed in ``/testbed``. A converted command may run a shell builtin or
keyword, a program of such an image (:data:`STANDARD`), a path, a function or alias the command
defines, or a program the run itself installed earlier (``pip install X``, ``apt-get install X``,
...) or that the task's repository provides (its console scripts start with its name:
``sphinx-build`` in Sphinx, ``django-admin`` in Django). A harness's own tool name
(:data:`HARNESS_TOOLS`: SWE-agent's ``open``/``goto``/``edit``, OpenHands' ``execute_bash``,
Claude Code's ``Read``, ...) never is: those exist only inside the harness that recorded the run.

Programs are read with the project's one shell lexer (:func:`pipeline.text.shell.split_command`: pipes,
``&&``/``||``/``;`` lists, subshells and ``$(...)`` split; wrappers such as ``timeout``, ``env``,
``bash -c`` peeled); compound-command keywords (``if``/``then``/``do``/``{`` ...) and redirections
are skipped here. A program word that is an expansion (``$PYTHON``) cannot be resolved statically
and is accepted: it is not a harness tool name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pipeline.text.shell import Segment, split_command


def _words(text: str) -> frozenset[str]:
    """A word list written as text (one home for the long lists below)."""
    return frozenset(text.split())


# Shell builtins and keywords (bash and dash) that can stand where a program does.
BUILTINS = _words(
    """
    . : [ [[ alias bg bind break builtin caller cd command compgen complete continue declare
    dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs
    kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift
    shopt source suspend test times trap true type typeset ulimit umask unalias unset wait
    """
)

# Programs of a Linux + Python development image (Debian/Ubuntu base, build tools, the usual
# language toolchains and the Python tools SWE-bench images install).
STANDARD = _words(
    """
    awk gawk mawk sed grep egrep fgrep rg ag find xargs locate updatedb which whereis whatis
    file stat ls dir vdir cat tac nl od hexdump xxd strings head tail less more most wc sort
    uniq cut paste join comm tr fold fmt column rev shuf split csplit expand unexpand pr tee seq
    yes sleep date cal env printenv basename dirname realpath readlink pathchk mktemp mkdir
    rmdir rm cp mv ln link unlink touch chmod chown chgrp install dd sync truncate du df free
    uname hostname id whoami groups who w uptime ps pgrep pkill top htop kill killall nproc
    lscpu lsblk mount umount time timeout nice nohup stdbuf ionice watch sudo su diff diff3
    sdiff cmp patch md5sum sha1sum sha256sum sha512sum cksum sum base64 base32 iconv tree jq yq
    bc dc expr factor numfmt tput clear reset stty tty script logger getent ldd ldconfig strace
    ltrace gdb lldb valgrind perf objdump readelf nm size ar as ld strip gcc g++ cc c++ cpp
    clang clang++ clang-format make cmake ctest cpack ninja meson autoconf automake autoreconf
    libtool pkg-config m4 bison flex yacc lex git git-lfs svn hg tar gzip gunzip zcat zless
    zgrep bzip2 bunzip2 bzcat xz unxz xzcat zstd unzstd lz4 zip unzip 7z curl wget ssh scp sftp
    rsync nc netcat ping ip ifconfig netstat ss lsof telnet dig nslookup host openssl gpg apt
    apt-get apt-cache dpkg dpkg-query aptitude yum dnf rpm apk snap locale localedef man info vi
    vim nvim nano ed emacs sqlite3 psql mysql redis-cli crontab service systemctl journalctl
    python python2 python3 python3.6 python3.7 python3.8 python3.9 python3.10 python3.11
    python3.12 python3.13 pip pip2 pip3 pip3.8 pip3.9 pip3.10 pip3.11 pip3.12 pydoc pydoc3
    ipython ipython3 jupyter pytest py.test tox nox coverage flake8 pyflakes pycodestyle
    pydocstyle pylint mypy pyright black isort ruff yapf autopep8 bandit pre-commit poetry
    pipenv pipx uv uvx virtualenv venv conda mamba micromamba pyenv setuptools twine wheel build
    cython f2py nosetests nose2 trial hypothesis sphinx-build sphinx-apidoc asv pybabel gunicorn
    uvicorn celery alembic node nodejs npm npx yarn pnpm tsc ts-node deno bun eslint prettier
    jest mocha go gofmt cargo rustc rustup rustfmt clippy-driver java javac jar mvn gradle ant
    kotlin kotlinc scala sbt ruby gem bundle bundler rake irb erb perl cpan php composer lua
    luajit R Rscript julia dotnet swift swiftc ghc cabal stack erl elixir mix docker xdg-open
    shellcheck shfmt bats sha224sum sha384sum b2sum tabs getconf arch nl printf echo true false
    test kill pwd chroot unshare nsenter setsid flock runuser logname users pinky lsattr chattr
    fuser pmap vmstat iostat dmesg sysctl bash sh dash zsh ksh fish csh tcsh busybox
    """
)

# Package managers whose ``install`` arguments name programs the run may call afterwards.
_INSTALLERS = {
    "pip": "install",
    "pip3": "install",
    "pipx": "install",
    "uv": "install",  # uv pip install / uv tool install: the words after "install"
    "conda": "install",
    "mamba": "install",
    "apt-get": "install",
    "apt": "install",
    "yum": "install",
    "apk": "add",
    "npm": "install",
    "yarn": "add",
    "gem": "install",
    "cargo": "install",
    "go": "install",
}
_SPEC_END = re.compile(r"[\[=<>!~;@ ]")
_REDIRECT = re.compile(r"^\d*(?:[<>]|&>)")
_LEADING_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "(", "coproc"}
)
_NO_PROGRAM = frozenset({"fi", "done", "esac", "}", "for", "select", "case", "in", "function", "))", "]]"})
_PROGRAM_WORD = re.compile(r"^[A-Za-z0-9_][\w.+-]*$")


def _harness_tools() -> frozenset[str]:
    """Every tool name of a harness the project reads that is not also a program or builtin."""
    from pipeline.convert import tools
    from pipeline.convert.sweagent_window import JSON_SIGNATURES
    from pipeline.parsers.sweagent_tools import WINDOW_COMMANDS

    names: set[str] = set()
    for table in (
        tools.BASH_TOOLS,
        tools.EDITOR_TOOLS,
        tools.THINK_TOOLS,
        tools.TODO_TOOLS,
        tools.READ_TOOLS,
        tools.WRITE_TOOLS,
        tools.REPLACE_TOOLS,
        tools.LIST_TOOLS,
        tools.SEARCH_TOOLS,
        tools.PATCH_TOOLS,
        tools.CLAUDE_TOOLS,
        tools.PI_TOOLS,
        WINDOW_COMMANDS,
        JSON_SIGNATURES,
    ):
        names.update(table)
    # SWE-agent's tool bundles (0.x and 1.x) and their exits, OpenHands' and mini's own tools
    names.update(
        _words(
            """
        open goto scroll_up scroll_down create edit search_dir search_file find_file filemap
        submit exit_cost exit_context exit_format exit_api exit_error exit_forfeit skip insert
        append windowed_edit_replace windowed_edit_linting windowed_edit_rewrite _state
        _state_anthropic review_on_submit review_on_submit_m str_replace_editor execute_bash
        execute_ipython_cell think finish browser web_read task_tracker delegate condensation
        recall str_replace view_file create_file edit_file MultiEdit NotebookEdit WebFetch
        WebSearch Task TodoWrite ExitPlanMode BashOutput KillBash KillShell SlashCommand
        """
        )
    )
    return frozenset(n for n in names if n not in STANDARD and n not in BUILTINS)


HARNESS_TOOLS: frozenset[str] = _harness_tools()


@dataclass
class Programs:
    """What earlier commands of a run made available: installed packages, defined names."""

    repo_names: tuple[str, ...] = ()
    defined: set[str] = field(default_factory=set)

    def allowed(self, prog: str) -> bool:
        base = prog.rsplit("/", 1)[-1]
        if "/" in prog or base in BUILTINS or base in STANDARD or base in self.defined:
            return True
        if not _PROGRAM_WORD.match(base):
            return True  # an expansion or a quoted oddity: cannot be a harness tool name
        low = base.lower()
        return any(low.startswith(n) for n in self.repo_names)


def programs_of(command: str, segments: list[Segment] | None = None) -> tuple[list[str], set[str]]:
    """The program words ``command`` runs, and the names it defines or installs for later
    (``segments``: its ``split_command``, when the caller has it)."""
    progs: list[str] = []
    defined: set[str] = set()
    prev_op = ""
    prev_redirect = False
    for seg in split_command(command) if segments is None else segments:
        argv = list(seg.argv)
        if prev_op == "&" and prev_redirect:
            argv = argv[1:]  # ``2>&1``: the lexer split the redirection at its "&"
        prev_redirect = bool(argv) and bool(_REDIRECT.match(argv[-1]))
        prev_op = seg.op
        if seg.op.startswith("))"):
            continue  # the inside of an arithmetic ``$((...))`` or ``((...))``: no program
        while argv and (argv[0] in _LEADING_KEYWORDS or _REDIRECT.match(argv[0])):
            if _REDIRECT.match(argv[0]) and argv[0].rstrip("0123456789&") in ("<", ">", ">>", "&>", "<<<"):
                argv = argv[2:]  # ``> file cmd``: the operator and its target
            else:
                argv = argv[1:]
        if not argv or argv[0] in _NO_PROGRAM or argv[0].startswith("$") or argv[0].startswith("<<"):
            if len(argv) > 1 and argv[0] == "function":
                defined.add(argv[1].removesuffix("()"))
            continue
        if seg.op == "()" and len(argv) == 1:
            defined.add(argv[0])  # ``name() { ...; }``
            continue
        if _ENV_ASSIGN.match(argv[0]):
            continue
        prog = argv[0]
        progs.append(prog)
        if prog == "alias":
            defined.update(a.split("=", 1)[0] for a in argv[1:] if "=" in a)
        defined.update(_installed(argv))
    return progs, defined


_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")


def _installed(argv: list[str]) -> Iterable[str]:
    """The program names an install command may provide (the package names it installs)."""
    prog = argv[0].rsplit("/", 1)[-1]
    if prog.startswith("python") and argv[1:3] == ["-m", "pip"]:
        argv, prog = argv[2:], "pip"
    verb = _INSTALLERS.get(prog)
    if verb is None or verb not in argv:
        return ()
    words = argv[argv.index(verb) + 1 :]
    names: list[str] = []
    for w in words:
        if w.startswith("-") or "/" in w or w == ".":
            continue
        name = _SPEC_END.split(w, 1)[0].lower()
        if name:
            names.extend({name, name.replace("_", "-"), name.split("-", 1)[0]})
    return names


def repo_program_names(repo: str) -> tuple[str, ...]:
    """Lower-case prefixes of the console scripts a task's repository installs (its name)."""
    base = repo.replace("/", "__").split("__")[-1].split(".")[0].lower()
    return tuple(n for n in {base, base.replace("_", "-"), base.removeprefix("py")} if len(n) >= 3)


def unknown_programs(
    commands: list[str], repo: str, segments: list[list[Segment]] | None = None
) -> list[tuple[int, str, str]]:
    """``(turn, program, kind)`` for every program a run's commands run that the target image
    lacks; ``kind`` is ``harness_tool`` for a harness's tool name, else ``unknown_program``."""
    known = Programs(repo_names=repo_program_names(repo))
    out: list[tuple[int, str, str]] = []
    for turn, cmd in enumerate(commands):
        progs, defined = programs_of(cmd, None if segments is None else segments[turn])
        known.defined |= defined
        for prog in progs:
            if prog in HARNESS_TOOLS:
                out.append((turn, prog, "harness_tool"))
            elif not known.allowed(prog):
                out.append((turn, prog, "unknown_program"))
    return out
