"""Metrics over audio and video: sound similarity, ID3 tags, frame-by-frame video equality, and
whether the player fills the screen.

The audio comparison reproduces OSWorld's scores: librosa's default MFCCs (computed here with
numpy/scipy, which spares the grader librosa's numba/llvmlite stack and its first-call compile of
about 20 s), normalised per coefficient, aligned by FastDTW with cosine distance, and mapped to
``exp(-distance / path length)``. Decoding (libsndfile through soundfile) and resampling (soxr,
high quality) are the same libraries librosa uses, so equal inputs give equal scores.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import RuleError, osworld_match_value
from mcpworld.evaluation.registry import metric

log = logging.getLogger(__name__)

# librosa.load / librosa.feature.mfcc defaults (what OSWorld calls them with)
SAMPLE_RATE = 22050
N_FFT = 2048
HOP = 512
N_MELS = 128
N_MFCC = 20
TOP_DB = 80.0
AMIN = 1e-10


# --------------------------------------------------------------------------------------------
# audio


def load_audio(path: str | Path) -> np.ndarray | None:
    """Mono float32 samples at 22050 Hz, as ``librosa.load(path)`` gives them; None if undecodable
    or not finite (librosa refuses such a buffer).

    Files libsndfile cannot decode (AAC/M4A, for instance) count as unreadable; librosa would
    try ffmpeg through audioread next, which this machine does not have.
    """
    import soundfile
    import soxr

    try:
        with soundfile.SoundFile(str(path)) as handle:
            rate = handle.samplerate
            samples = handle.read(frames=-1, dtype="float32", always_2d=False).T
    except (soundfile.SoundFileError, RuntimeError, OSError) as exc:
        log.info("compare_audios: cannot decode %s: %s", path, exc)
        return None
    if not np.all(np.isfinite(samples)):
        log.info("compare_audios: %s holds non-finite samples", path)
        return None
    if samples.ndim > 1:
        samples = np.mean(samples, axis=tuple(range(samples.ndim - 1)))
    if rate == SAMPLE_RATE or samples.shape[-1] == 0:
        return samples
    wanted = int(np.ceil(samples.shape[-1] * SAMPLE_RATE / rate))
    resampled = soxr.resample(samples, rate, SAMPLE_RATE, quality="soxr_hq")
    resampled = resampled[:wanted] if len(resampled) >= wanted else np.pad(resampled, (0, wanted - len(resampled)))
    return np.asarray(resampled, dtype=samples.dtype)


# Slaney's mel scale, linear below 1 kHz and logarithmic above; the constants are computed exactly
# as librosa does (1000 / (200/3) is 14.999999999999998, not 15), so the filters match to the bit.
_MEL_STEP_HZ = 200.0 / 3
_LOG_START_HZ = 1000.0
_LOG_START_MEL = _LOG_START_HZ / _MEL_STEP_HZ
_LOG_STEP = np.log(6.4) / 27.0


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    mels = hz / _MEL_STEP_HZ
    above = hz >= _LOG_START_HZ
    mels[above] = _LOG_START_MEL + np.log(hz[above] / _LOG_START_HZ) / _LOG_STEP
    return mels


def _mel_to_hz(mels: np.ndarray) -> np.ndarray:
    hz = _MEL_STEP_HZ * mels
    above = mels >= _LOG_START_MEL
    hz[above] = _LOG_START_HZ * np.exp(_LOG_STEP * (mels[above] - _LOG_START_MEL))
    return hz


def mel_filterbank(rate: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """Triangular, area-normalised (Slaney) mel filters over the rfft bins, float32 (n_mels, bins)."""
    bins = np.fft.rfftfreq(n=n_fft, d=1.0 / rate)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0], _hz_to_mel(np.array([rate / 2.0]))[0], n_mels + 2))
    widths = np.diff(edges)
    ramps = np.subtract.outer(edges, bins)
    weights = np.zeros((n_mels, len(bins)), dtype=np.float32)
    for i in range(n_mels):
        weights[i] = np.maximum(0, np.minimum(-ramps[i] / widths[i], ramps[i + 2] / widths[i + 1]))
    weights *= (2.0 / (edges[2 : n_mels + 2] - edges[:n_mels]))[:, np.newaxis]
    return weights


def _power_spectrogram(samples: np.ndarray) -> np.ndarray:
    """|STFT|² (Hann window, centred frames, zero padding), float32 (bins, frames)."""
    import scipy.fft
    import scipy.signal

    window = scipy.signal.get_window("hann", N_FFT, fftbins=True)
    padded = np.pad(samples, (N_FFT // 2, N_FFT // 2))
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    spectrum = np.empty((N_FFT // 2 + 1, len(frames)), dtype=np.complex64)
    block = 1024
    for start in range(0, len(frames), block):
        chunk = frames[start : start + block]
        spectrum[:, start : start + len(chunk)] = scipy.fft.rfft(window * chunk, axis=-1).T
    return np.abs(spectrum) ** 2


def mfcc(samples: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
    """20 MFCCs per frame (20, frames), as ``librosa.feature.mfcc(y=samples, sr=rate)`` computes them."""
    import scipy.fft

    mel = np.dot(mel_filterbank(rate), _power_spectrogram(samples))
    decibels = 10.0 * np.log10(np.maximum(AMIN, mel))
    decibels = np.maximum(decibels, decibels.max() - TOP_DB)
    return scipy.fft.dct(decibels, axis=-2, type=2, norm="ortho")[:N_MFCC]


def _normalise_rows(features: np.ndarray) -> np.ndarray:
    """Each coefficient divided by its largest magnitude (rows that are all ~0 left alone)."""
    peak = np.max(np.abs(features).astype(float), axis=1, keepdims=True)
    peak[peak < np.finfo(features.dtype).tiny] = 1.0
    return (features / peak).astype(features.dtype)


def audio_similarity(first: np.ndarray, second: np.ndarray) -> float:
    """``exp(-d / n)``: d the FastDTW cost of aligning the normalised MFCC frames by cosine distance,
    n the length of the alignment path. Identical sounds give 1."""
    from fastdtw import fastdtw
    from scipy.spatial.distance import cosine

    a, b = _normalise_rows(mfcc(first)), _normalise_rows(mfcc(second))
    distance, path = fastdtw(a.T, b.T, dist=cosine)
    return float(np.exp(-distance / len(path))) if path else 0.0


@metric("compare_audios")
def compare_audios(result: str | None, expected: str | None) -> float:
    """Similarity in [0, 1] of two audio files (wav, mp3, flac, ogg…), by MFCC + FastDTW as OSWorld.

    No result path scores 0. When neither file holds any decodable sound the score is 1 (both
    "empty"), when only one does it is 0, as in OSWorld.
    """
    if not result or not expected:
        return 0.0
    first, second = load_audio(result), load_audio(expected)
    first_bad, second_bad = first is None or first.size == 0, second is None or second.size == 0
    if first_bad or second_bad:
        return float(first_bad and second_bad)
    assert first is not None and second is not None  # (neither is bad)
    return audio_similarity(first, second)


# --------------------------------------------------------------------------------------------
# ID3 tags


def id3_tags(path: str) -> dict[str, list[str]] | None:
    """The easy ID3 tags of an MP3 (``title``, ``artist``, ``album``…); None when the file does not
    exist or has no ID3 tag."""
    from mutagen.easyid3 import EasyID3
    from mutagen.id3 import ID3NoHeaderError

    if not Path(path).is_file():
        return None
    try:
        return dict(EasyID3(path))
    except ID3NoHeaderError:
        return None


@metric("check_mp3_meta")
def check_mp3_meta(result: str | None, rules: Any) -> float:
    """1 when each ID3 tag named in ``rules`` fits its ``{method, ref}`` rule, e.g.
    ``{"title": {"method": "eq", "ref": "Missing You"}, "artist": {…}}``, decided as OSWorld's
    ``_match_value_to_rule`` does (``osworld_match_value``: no coercion, ``eq`` is exact).

    result = local path of the MP3. Tag names are case-insensitive; a tag with several values is
    compared as the values joined by commas; an absent or unknown tag as "". The rules are
    checked in order and the first miss decides (a later rule is not looked at); a rule OSWorld's
    matcher fails on scores 0. A missing file, or one without a readable ID3 tag, scores 0
    (OSWorld raised on it). Empty rules pass any tagged file, as in OSWorld.
    """
    if not isinstance(rules, dict) or not all(isinstance(r, dict) for r in rules.values()):
        raise UserError(f"metric 'check_mp3_meta' needs rules mapping tag names to {{method, ref}}, got {rules!r}")
    if not result:
        return 0.0
    try:
        tags = id3_tags(result)
    except Exception as exc:  # mutagen.MutagenError, OSError: a broken tag or file (OSWorld raised)
        log.debug("cannot read the ID3 tag of %s: %s", result, exc)
        return 0.0
    if tags is None:
        return 0.0
    for name, rule in rules.items():
        value = tags.get(str(name).lower(), "")
        if isinstance(value, list):
            value = ",".join(value)
        try:
            if not osworld_match_value(value, rule):
                return 0.0
        except RuleError:
            return 0.0
    return 1.0


# --------------------------------------------------------------------------------------------
# video


@metric("compare_videos")
def compare_videos(result: str | None, expected: str | None, max_frames_to_check: int = 100, threshold: int = 5) -> float:
    """1 when two videos show the same frames, 0 otherwise (OSWorld's test).

    The first ``max_frames_to_check`` frames are compared pairwise by perceptual hash: a pair whose
    hashes differ in more than ``threshold`` bits is a mismatch, and more than ``threshold``
    mismatches fail. A video that ends before the other fails; both ending together passes. A
    result that cannot be opened scores 0.
    """
    if not result or not expected:
        return 0.0
    import cv2
    import imagehash
    from PIL import Image

    mine, gold = cv2.VideoCapture(str(result)), cv2.VideoCapture(str(expected))
    try:
        if not mine.isOpened():
            return 0.0
        mismatches = 0
        for _ in range(int(max_frames_to_check)):
            ok_mine, frame_mine = mine.read()
            ok_gold, frame_gold = gold.read()
            if not ok_mine or not ok_gold:
                return float(ok_mine == ok_gold)
            hashes = [imagehash.phash(Image.fromarray(cv2.cvtColor(f, cv2.COLOR_BGR2RGB))) for f in (frame_mine, frame_gold)]
            if hashes[0] - hashes[1] > threshold:
                mismatches += 1
                if mismatches > threshold:
                    return 0.0
        return 1.0
    finally:
        mine.release()
        gold.release()


# --------------------------------------------------------------------------------------------
# the player's window


@metric("is_vlc_fullscreen")
def is_vlc_fullscreen(result: Any, expected: Any) -> float:
    """1 when the window size equals the screen size (``{"width", "height"}`` dicts, from the getters
    ``vm_screen_size`` and ``vm_window_size`` in either order), compared as OSWorld does (``==``:
    ``"1920"`` is not 1920); no window (None) or a missing field scores 0."""
    if not isinstance(result, dict) or not isinstance(expected, dict):
        return 0.0
    try:
        return float(bool(result["width"] == expected["width"] and result["height"] == expected["height"]))
    except KeyError:
        return 0.0
