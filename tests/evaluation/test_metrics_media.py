import wave
from pathlib import Path

import numpy as np
import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.media import (
    check_mp3_meta,
    compare_audios,
    compare_videos,
    id3_tags,
    is_vlc_fullscreen,
    load_audio,
)
from mcpworld.evaluation.registry import METRICS


def test_media_metrics_are_registered():
    assert {"compare_audios", "check_mp3_meta", "compare_videos", "is_vlc_fullscreen"} <= set(METRICS)


# --- audio ----------------------------------------------------------------------------------------


def _wav(path: Path, freq: float, seconds: float = 2.0, rate: int = 44100, channels: int = 1, seed: int = 0) -> str:
    """A 16-bit PCM tone with a little seeded noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(rate * seconds)) / rate
    x = 0.3 * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(len(t))
    pcm = (np.clip(x, -1, 1) * 32767).astype("<i2")
    if channels == 2:
        pcm = np.repeat(pcm[:, None], 2, axis=1)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())
    return str(path)


def test_load_audio_is_mono_at_22050(tmp_path):
    samples = load_audio(_wav(tmp_path / "s.wav", 440, seconds=1.0, rate=44100, channels=2))
    assert samples.dtype == np.float32 and samples.shape == (22050,)
    assert load_audio(tmp_path / "missing.wav") is None


# Scores OSWorld's compare_audios (librosa 0.11 MFCC + fastdtw) gives for these very files.
OSWORLD_SCORES = [("a", "b", 0.358908069665205), ("a", "c", 0.9195732291683887), ("b", "c", 0.3450607657322806)]


def test_compare_audios_matches_osworld(tmp_path):
    files = {
        "a": _wav(tmp_path / "a.wav", 440),
        "b": _wav(tmp_path / "b.wav", 660, seconds=1.5),
        "c": _wav(tmp_path / "c.wav", 440, rate=22050, channels=2, seed=1),
    }
    assert compare_audios(files["a"], files["a"]) == pytest.approx(1.0)
    # 1e-6: resampling and FFT libraries differ in the last bits between machines
    for first, second, score in OSWORLD_SCORES:
        assert compare_audios(files[first], files[second]) == pytest.approx(score, abs=1e-6)


def test_compare_audios_missing_and_empty(tmp_path):
    tone = _wav(tmp_path / "a.wav", 440, seconds=0.5)
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    silent = tmp_path / "zero.wav"
    with wave.open(str(silent), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(22050)
    assert compare_audios(None, tone) == 0.0
    assert compare_audios(str(tmp_path / "missing.mp3"), tone) == 0.0
    assert compare_audios(str(empty), tone) == 0.0
    assert compare_audios(str(empty), str(silent)) == 1.0  # both without sound, as OSWorld scores it


# --- ID3 tags -------------------------------------------------------------------------------------


def _mp3(path: Path, **tags: str) -> str:
    import soundfile
    from mutagen.easyid3 import EasyID3

    t = np.arange(22050) / 22050
    soundfile.write(str(path), (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 22050, format="MP3")
    if tags:
        try:
            audio = EasyID3(str(path))
        except Exception:
            audio = EasyID3()
        audio.update(tags)
        audio.save(str(path))
    return str(path)


RULES = {"title": {"method": "eq", "ref": "Missing You"}, "artist": {"method": "eq", "ref": "Cheng Xiang"}}


def test_check_mp3_meta(tmp_path):
    tagged = _mp3(tmp_path / "Cheng Xiang - Missing You.mp3", title="Missing You", artist="Cheng Xiang")
    assert id3_tags(tagged)["title"] == ["Missing You"]
    assert check_mp3_meta(tagged, RULES) == 1.0
    assert check_mp3_meta(tagged, {**RULES, "artist": {"method": "eq", "ref": "Han Baoyi"}}) == 0.0
    # a tag that is not there compares as ""
    assert check_mp3_meta(tagged, {"album": {"method": "eq", "ref": ""}}) == 1.0
    assert check_mp3_meta(_mp3(tmp_path / "wrong.mp3", title="Missing You"), RULES) == 0.0
    # the untouched file of the task has no ID3 tag at all
    assert check_mp3_meta(_mp3(tmp_path / "blank.mp3"), RULES) == 0.0
    # … which scores 0 even for a rule an absent tag would pass (OSWorld raised on it)
    assert check_mp3_meta(_mp3(tmp_path / "blank2.mp3"), {"album": {"method": "eq", "ref": ""}}) == 0.0
    assert check_mp3_meta(None, RULES) == 0.0
    assert check_mp3_meta(str(tmp_path / "missing.mp3"), RULES) == 0.0
    with pytest.raises(UserError, match="check_mp3_meta"):
        check_mp3_meta(tagged, {"title": "Missing You"})


def test_check_mp3_meta_matches_as_osworld(tmp_path):
    """OSWorld's _match_value_to_rule decides each rule; the first miss ends the check."""
    tagged = _mp3(tmp_path / "t.mp3", title="Missing You", artist="Cheng Xiang")
    assert check_mp3_meta(tagged, {}) == 1.0  # nothing to check: OSWorld gave 1
    assert check_mp3_meta(_mp3(tmp_path / "blank.mp3"), {}) == 0.0  # still needs an ID3 tag
    assert check_mp3_meta(tagged, {"TITLE": {"method": "re.I", "ref": "^missing"}}) == 1.0
    assert check_mp3_meta(tagged, {"title": {"method": "bogus", "ref": 1}}) == 0.0  # OSWorld raised
    # a miss first: the broken rule after it is never looked at
    assert check_mp3_meta(tagged, {"artist": {"method": "eq", "ref": "Nope"}, "title": {"method": "bogus"}}) == 0.0
    junk = tmp_path / "junk.mp3"
    junk.write_bytes(b"ID3\x04\x00\x00\x00\x00\x00\x10garbage")
    assert check_mp3_meta(str(junk), {}) == 0.0


# --- video ----------------------------------------------------------------------------------------


def _video(path: Path, frames: int, flip: bool = False, changed_from: int | None = None) -> str:
    import cv2

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (64, 48))
    assert writer.isOpened()
    for i in range(frames):
        frame = np.zeros((48, 64, 3), np.uint8)
        frame[:16, : 4 + 4 * i] = (255, 200, 0)  # a bar growing along the top
        frame[30:40, 10:20] = (0, 0, 255)
        if changed_from is not None and i >= changed_from:
            frame[:, :] = 255 - frame
        writer.write(frame[::-1] if flip else frame)
    writer.release()
    return str(path)


def test_compare_videos(tmp_path):
    gold = _video(tmp_path / "gold.mp4", 12)
    assert compare_videos(_video(tmp_path / "same.mp4", 12), gold) == 1.0
    assert compare_videos(_video(tmp_path / "flipped.mp4", 12, flip=True), gold) == 0.0
    assert compare_videos(_video(tmp_path / "shorter.mp4", 10), gold) == 0.0
    # up to `threshold` differing frames are tolerated
    assert compare_videos(_video(tmp_path / "tail.mp4", 12, changed_from=7), gold) == 1.0
    assert compare_videos(_video(tmp_path / "tail2.mp4", 12, changed_from=6), gold) == 0.0
    # only the first max_frames_to_check frames are compared
    assert compare_videos(_video(tmp_path / "longer.mp4", 14), gold, max_frames_to_check=12) == 1.0
    assert compare_videos(None, gold) == 0.0
    assert compare_videos(str(tmp_path / "missing.mp4"), gold) == 0.0


# --- fullscreen -----------------------------------------------------------------------------------


def test_is_vlc_fullscreen():
    screen = {"width": 1920, "height": 1080}
    assert is_vlc_fullscreen(screen, {"width": 1920, "height": 1080}) == 1.0
    assert is_vlc_fullscreen(screen, {"width": 1920, "height": 1053}) == 0.0
    assert is_vlc_fullscreen(screen, None) == 0.0
    assert is_vlc_fullscreen(None, screen) == 0.0
    # compared with ==, as OSWorld: a size given as text is not the number
    assert is_vlc_fullscreen(screen, {"width": "1920", "height": 1080}) == 0.0
    assert is_vlc_fullscreen(screen, {"width": 1920}) == 0.0
