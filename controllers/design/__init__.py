"""Control design and evaluation on python-control: models, blocks and FMUs as
named I/O systems and their linearisation (``adapters``), LQR/LQG/LQI synthesis
(``lq``), margins (``margins``), modes and minimal realizations
(``realization``), PID tuning (``pid_tuning``), figures (``plots``), robustness
scans (``robustness``), the arm's LQG and the antenna servo designs, closed-loop
validation in co-simulation, move metrics and the arm's move as a sweep case
(``mbdcore.sweep`` runs the cases); the errors in
``errors``."""

from controllers.design.adapters import (
    FMUPlant,
    SignalNameError,
    arm_iosys,
    arm_modal_analysis,
    as_iosystem,
    block_iosys,
    check_names,
    fmu_iosys,
    joint_angles,
    linearize_arm,
    linearize_fmu,
)
from controllers.design.antenna_servo import (
    FMU_NAMES,
    design_servo,
    pointing_axis_plant,
    servo_cosim_system,
    servo_loops,
    servo_margins,
)
from controllers.design.arm_lqg import (
    ARM_SIGNAL_UNITS,
    DEFAULT_MEASUREMENT_NOISE,
    DEFAULT_PROCESS_NOISE,
    DEFAULT_Q,
    DEFAULT_Q_INTEGRAL,
    DEFAULT_R,
    INTEGRATED,
    MEASURED,
    ROBUST_EI_FACTORS,
    ROBUST_MODE_WEIGHTS,
    ROBUST_PAYLOADS,
    ROBUST_PROCESS_NOISE,
    arm_plant_grid,
    design_arm_lqg,
    design_arm_lqg_robust,
    joint_pd_controller,
    write_default_design,
)
from controllers.design.metrics import move_metrics, peak_to_peak_2d, residual_vibration
from controllers.design.errors import DesignError, DesignWarning
from controllers.design.lq import (
    check_stabilizable,
    lqg,
    lqg_integral,
    lqr,
    modal_weight,
    process_noise_covariance,
    weight_matrix,
)
from controllers.design.margins import (
    loop_margins,
    margins_from_response,
    principal_phase,
    siso_margins,
)
from controllers.design.pid_tuning import PIDTuning, tune_pid
from controllers.design.plots import plot_bode, plot_step
from controllers.design.realization import minimal_realization, modal_table
from controllers.design.robustness import RobustnessScan, robustness_scan
from controllers.design.tuning import evaluate_move
from controllers.design.validation import (
    NOT_SETTLED,
    closed_loop_move,
    end_effector_deflection,
    move_report,
    settled_move,
    validate_move,
)

__all__ = [
    "DesignError",
    "DesignWarning",
    "SignalNameError",
    "check_names",
    "arm_iosys",
    "joint_angles",
    "linearize_arm",
    "arm_modal_analysis",
    "as_iosystem",
    "block_iosys",
    "FMUPlant",
    "fmu_iosys",
    "linearize_fmu",
    "weight_matrix",
    "check_stabilizable",
    "lqr",
    "lqg",
    "process_noise_covariance",
    "modal_table",
    "loop_margins",
    "siso_margins",
    "tune_pid",
    "minimal_realization",
    "PIDTuning",
    "lqg_integral",
    "modal_weight",
    "margins_from_response",
    "principal_phase",
    "RobustnessScan",
    "robustness_scan",
    "plot_bode",
    "plot_step",
    "ARM_SIGNAL_UNITS",
    "DEFAULT_Q",
    "DEFAULT_R",
    "DEFAULT_PROCESS_NOISE",
    "DEFAULT_MEASUREMENT_NOISE",
    "MEASURED",
    "DEFAULT_Q_INTEGRAL",
    "INTEGRATED",
    "design_arm_lqg",
    "ROBUST_MODE_WEIGHTS",
    "ROBUST_PROCESS_NOISE",
    "ROBUST_PAYLOADS",
    "ROBUST_EI_FACTORS",
    "design_arm_lqg_robust",
    "arm_plant_grid",
    "write_default_design",
    "joint_pd_controller",
    "pointing_axis_plant",
    "design_servo",
    "servo_loops",
    "servo_margins",
    "FMU_NAMES",
    "servo_cosim_system",
    "move_metrics",
    "peak_to_peak_2d",
    "residual_vibration",
    "end_effector_deflection",
    "move_report",
    "settled_move",
    "NOT_SETTLED",
    "closed_loop_move",
    "validate_move",
    "evaluate_move",
]
