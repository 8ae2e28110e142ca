"""Animations of a run: GIF (Pillow, always available) or MP4 (only when ffmpeg is installed).

Frames are the kept states drawn by :func:`attndyn.plotting.draw_state` on fixed axes; the
same frames feed the layer/time slider of the HTML report (:func:`render_frames`).
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._io import atomic_write
from .._trajectory import HardmaxTrajectory, Trajectory
from .._validation import InputError
from ._save import png_bytes
from ._style import new_figure, sequence_states, square_limits, to_numpy
from ._trajectories import draw_state, drawn_states

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["frame_indices", "render_frames", "animate", "ffmpeg_available"]


def ffmpeg_available() -> bool:
    return shutil.which("ffmpeg") is not None


def frame_indices(traj: Trajectory, max_frames: int = 40) -> list[int]:
    """At most ``max_frames`` kept-state indices, evenly spread, always the first and the last."""
    T = len(traj)
    return sorted(set(np.linspace(0, T - 1, min(T, max_frames)).round().astype(int).tolist()))


def _draw_frame(
    traj: Trajectory, k: int, sequence: int | None, lim: Any, d: int, title: str | None, size: float
) -> Figure:
    fig = new_figure(size, size)
    ax: Any = fig.add_subplot(projection="3d") if d >= 3 else fig.add_subplot()  # Axes3D or Axes
    draw_state(ax, traj, k, sequence=sequence, trail=True, hull=True, limits=lim)
    t = float(to_numpy(traj.ts)[k])
    label = f"layer {int(round(t))}" if isinstance(traj, HardmaxTrajectory) else f"t = {t:.3g}"
    ax.set_title(f"{title} — {label}" if title else label, fontsize=10)
    names = drawn_states(traj, sequence, eigenbasis=False)[2]
    ax.set_xlabel(names[0]), ax.set_ylabel(names[1])
    if d >= 3:
        ax.set_zlabel(names[2])
        pts = sequence_states(traj, sequence)[0].reshape(-1, d)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        ax.set_xlim(lo[0], hi[0]), ax.set_ylim(lo[1], hi[1]), ax.set_zlim(lo[2], hi[2])
    return fig


def render_frames(
    traj: Trajectory,
    indices: list[int] | None = None,
    *,
    sequence: int | None = None,
    title: str | None = None,
    size: float = 4.2,
    dpi: int = 90,
) -> list[bytes]:
    """PNG bytes of the kept states ``indices`` (default :func:`frame_indices`), on fixed axes."""
    states, _ = sequence_states(traj, sequence)
    d = states.shape[-1]
    if d < 2:
        raise InputError("frames are drawn for tokens of dimension >= 2")
    indices = frame_indices(traj) if indices is None else indices
    lim = square_limits(states.reshape(-1, d)[:, :2])
    return [png_bytes(_draw_frame(traj, k, sequence, lim, d, title, size), dpi=dpi) for k in indices]


def animate(
    traj: Trajectory | None,
    path: str | os.PathLike,
    *,
    sequence: int | None = None,
    fps: float = 4.0,
    max_frames: int = 40,
    title: str | None = None,
    frames: list[bytes] | None = None,
) -> Path:
    """Write an animation of the run to ``path``: ``.gif`` with Pillow, ``.mp4`` with ffmpeg.

    MP4 needs the ``ffmpeg`` program; without it an :class:`~attndyn.InputError` says so and how
    to get a GIF instead. Pre-rendered PNG ``frames`` (from :func:`render_frames`, or any figures'
    :func:`~attndyn.plotting._save.png_bytes`) may be passed instead of a trajectory (``traj=None``).
    """
    if traj is None and frames is None:
        raise InputError("animate() needs a trajectory or pre-rendered frames=[...]")
    p = Path(path)
    fmt = p.suffix.lower().lstrip(".")
    if fmt not in ("gif", "mp4"):
        raise InputError(f"animation path {str(p)!r} must end in .gif or .mp4")
    if fmt == "mp4" and not ffmpeg_available():
        raise InputError(
            "writing MP4 needs ffmpeg, which is not installed (apt-get install ffmpeg); "
            "write a .gif instead (Pillow, always available)"
        )
    if fps <= 0:
        raise InputError(f"fps must be positive, got {fps!r}")
    if frames is None:
        assert traj is not None  # checked above
        frames = render_frames(traj, frame_indices(traj, max_frames), sequence=sequence, title=title)
    from PIL import Image

    images = [Image.open(io.BytesIO(b)).convert("RGB") for b in frames]
    if fmt == "gif":
        ms = int(round(1000 / fps))
        durations = [ms] * (len(images) - 1) + [ms * 4]  # linger on the final state
        atomic_write(
            p,
            lambda tmp: images[0].save(
                tmp, format="GIF", save_all=True, append_images=images[1:], duration=durations, loop=0
            ),
        )
        return p
    return _mp4(images, p, fps)


def _mp4(images: list[Any], p: Path, fps: float) -> Path:  # PIL images
    from matplotlib.animation import FFMpegWriter
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    w, h = images[0].size
    w, h = w - w % 2, h - h % 2  # yuv420p needs even sizes
    fig = Figure(figsize=(w / 100, h / 100), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.axis("off")
    im = ax.imshow(np.asarray(images[0])[:h, :w])
    writer = FFMpegWriter(fps=fps, extra_args=["-pix_fmt", "yuv420p"])  # type: ignore[arg-type]  # stub says int; any rate works

    def write(tmp: Path) -> None:
        with writer.saving(fig, str(tmp), dpi=100):
            for img in images:
                im.set_data(np.asarray(img)[:h, :w])
                writer.grab_frame()

    tmp_target = p.with_name(p.stem + ".partial.mp4")
    write(tmp_target)
    os.replace(tmp_target, p)
    return p
