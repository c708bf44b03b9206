"""Measures beyond time: ``benchmark_points.measure`` and ``change_points.measure`` (``time``,
the existing rows, or ``memory``: peak bytes), so a result stores a point per benchmark and
measure and each (benchmark, measure, fingerprint) is a series with its own change points
(``bot.history.points.MEASURES``). The unique constraint and the series indexes gain the column.

Revision ID: 0007_measures
Revises: 0006_web_sessions
Create Date: 2026-12-02 12:00:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = '0007_measures'
down_revision = '0006_web_sessions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('benchmark_points', schema=None) as batch_op:
        batch_op.add_column(sa.Column('measure', sa.String(length=16), server_default='time', nullable=False))
        batch_op.drop_constraint('uq_benchmark_points_result_id_benchmark', type_='unique')
        batch_op.create_unique_constraint(batch_op.f('uq_benchmark_points_result_id_benchmark_measure'),
                                          ['result_id', 'benchmark', 'measure'])
        batch_op.drop_index('ix_benchmark_points_series')
        batch_op.create_index('ix_benchmark_points_series',
                              ['repository_id', 'benchmark', 'measure', 'environment_id', 'kind', 'measured_at'],
                              unique=False)
    with op.batch_alter_table('change_points', schema=None) as batch_op:
        batch_op.add_column(sa.Column('measure', sa.String(length=16), server_default='time', nullable=False))
        batch_op.drop_index('ix_change_points_series')
        batch_op.create_index('ix_change_points_series', ['repository_id', 'benchmark', 'measure', 'environment_id'],
                              unique=False)


def downgrade() -> None:
    op.execute("DELETE FROM change_points WHERE measure <> 'time'")
    op.execute("DELETE FROM benchmark_points WHERE measure <> 'time'")
    with op.batch_alter_table('change_points', schema=None) as batch_op:
        batch_op.drop_index('ix_change_points_series')
        batch_op.create_index('ix_change_points_series', ['repository_id', 'benchmark', 'environment_id'], unique=False)
        batch_op.drop_column('measure')
    with op.batch_alter_table('benchmark_points', schema=None) as batch_op:
        batch_op.drop_index('ix_benchmark_points_series')
        batch_op.create_index('ix_benchmark_points_series',
                              ['repository_id', 'benchmark', 'environment_id', 'kind', 'measured_at'], unique=False)
        batch_op.drop_constraint('uq_benchmark_points_result_id_benchmark_measure', type_='unique')
        batch_op.create_unique_constraint(batch_op.f('uq_benchmark_points_result_id_benchmark'),
                                          ['result_id', 'benchmark'])
        batch_op.drop_column('measure')
