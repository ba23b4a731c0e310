"""Task names a recipe may use, and their constructors.

Every entry is a frozen dataclass implementing :class:`codesign.data.base.Task`; its fields are the
options a recipe's ``task`` section may set. Heavy packages (aeon, mnist1d, scikit-learn, librosa)
are imported only when a task that needs them loads its data.
"""

from __future__ import annotations

from typing import Any

from codesign.data.copy_first import CopyFirstDiscrete
from codesign.data.copy_first_continuous import CopyFirstContinuous, CopyFirstNoisy
from codesign.data.copying import CopyingMemory, SelectiveCopying
from codesign.data.dynamics import Lorenz, MackeyGlass
from codesign.data.echo import DelayedEcho
from codesign.data.files import FileDataset
from codesign.data.flip_flop import FlipFlop
from codesign.data.high_frequency import HighFrequencyPatterns
from codesign.data.mnist_1d import MNIST1D
from codesign.data.parity import Parity, TemporalParity
from codesign.data.sklearn_digits import SklearnDigits
from codesign.data.spoken_digits import SpeechCommandsDigits
from codesign.data.uea import UEADataset

TASKS: dict[str, type] = {
    # long-term memory (CMRU App. G.2)
    "copy_first": CopyFirstDiscrete,
    "copy_first_continuous": CopyFirstContinuous,
    "copy_first_noisy": CopyFirstNoisy,
    # state tracking
    "parity": Parity,
    "temporal_parity": TemporalParity,
    "flip_flop": FlipFlop,
    # copying and echo
    "selective_copying": SelectiveCopying,
    "copying_memory": CopyingMemory,
    "delayed_echo": DelayedEcho,
    "high_frequency": HighFrequencyPatterns,
    # dynamical systems
    "lorenz": Lorenz,
    "mackey_glass": MackeyGlass,
    # real data shipped in packages or generated locally
    "uea": UEADataset,
    "files": FileDataset,  # a user's own train and test files (.ts, UCR .tsv/.txt, .arff, .npz)
    "mnist1d": MNIST1D,
    "sklearn_digits": SklearnDigits,
    "spoken_digits": SpeechCommandsDigits,
}


def make_task(name: str, options: dict[str, Any]):
    return TASKS[name](**options)
