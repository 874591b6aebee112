"""``kpr probe-image build``: the probe image from the installed package, so that a CI job with nothing but
``pip install pytest-kpr`` can give kind the image the suites run their probes in.

The build context is made in a temporary directory: the Dockerfile the package ships
(``clusters/images/probe/Dockerfile``) and the package directory itself (``pytest_kpr/``, without byte code), which is
all the Dockerfile copies. From a checkout, ``make probe-image`` builds the same Dockerfile with the checkout as context.
With ``--unless-pinned`` nothing is built when the release pins a published image (``probe.image`` in the package's
clusters/versions.yaml): the kind provider pulls that one, for this machine's platform only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..core.inputs import BadInput


def default_tag() -> str:
    from .. import __version__

    return f"pytest-kpr-probe:{__version__}"


def context(dest: Path) -> Path:
    """Write the build context into ``dest`` (Dockerfile, pytest_kpr/); return the Dockerfile."""
    from ..run.resources import PACKAGE_DIR, packaged_dir

    clusters = packaged_dir("clusters")
    dockerfile = clusters / "images" / "probe" / "Dockerfile" if clusters is not None else None
    if dockerfile is None or not dockerfile.is_file():
        raise BadInput("the probe image's Dockerfile is not installed with this package (clusters/images/probe/Dockerfile)")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PACKAGE_DIR, dest / "pytest_kpr", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True)
    shutil.copy(dockerfile, dest / "Dockerfile")
    return dest / "Dockerfile"


def pinned_image() -> str:
    from ..run.resources import Pins, find_clusters_dir

    d = find_clusters_dir()
    return Pins.load(d).probe_image if d is not None else ""


def _run(args: argparse.Namespace) -> int:
    if args.unless_pinned:
        pinned = pinned_image()
        if pinned:
            print(f"kpr probe-image: the release pins {pinned}: nothing to build (the kind provider pulls it for this platform)")
            return 0
    if args.context_only is not None:
        print(context(args.context_only))
        return 0
    docker = shutil.which(args.docker) if os.sep not in args.docker else args.docker
    if not docker or not Path(docker).exists():
        raise BadInput(f"{args.docker} is not on PATH: building the probe image needs Docker (or write the context with --context-only DIR)")
    with tempfile.TemporaryDirectory(prefix=f"kpr-probe-image-{os.getpid()}-") as d:
        dockerfile = context(Path(d))
        argv = [docker, "build", "-t", args.tag, "-f", str(dockerfile)]
        if args.platform:
            argv += ["--platform", args.platform]
        print(f"kpr probe-image: building {args.tag} from the installed package ({' '.join(argv[1:])} <context>)", flush=True)
        return subprocess.run([*argv, d]).returncode


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("probe-image", help="The probe image: build it from the installed package (kpr probe-image build)",
                       description=__doc__.split("\n\n")[0])
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = ps.add_parser("build", help="docker build the probe image from the installed package",
                      description="Build the probe image (kpr probe, curl, iproute2, netstat) from the installed package with docker build; "
                                  "the tag defaults to the image --kpr-probe-image uses by default.")
    b.add_argument("--tag", default=default_tag(), help="image tag (default: %(default)s, the default --kpr-probe-image)")
    b.add_argument("--docker", default="docker", metavar="BIN", help="the docker binary (default: docker on PATH)")
    b.add_argument("--platform", default="", help="build for this platform (docker build --platform), e.g. linux/arm64")
    b.add_argument("--unless-pinned", action="store_true", help="build nothing when the release pins a published image")
    b.add_argument("--context-only", type=Path, metavar="DIR", help="write the build context to DIR and print its Dockerfile; build nothing")
    b.set_defaults(func=_run)
